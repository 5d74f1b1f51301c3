#!/usr/bin/env bash
# The shared training loop, end to end, on the toy task:
#   train_loop.sh TOY COMPARE MPIEXEC CASE
# CASE is one of: invariance, resume, resume_drawn_seed, ema, ema_bn, resume_other_world, preempt_one_rank,
# bad_input, nonfinite, damaged_checkpoint, oom_backoff, micro_batch_auto, early_stop, shard, eight_bit,
# master_weights. Each runs in a fresh directory and cleans up.
set -euo pipefail
toy=$1 compare=$2 mpiexec=$3 case=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
quiet=(--set obs.gpu_every_s=0)
run() { local n=$1; shift; "$mpiexec" -n "$n" "$toy" "${quiet[@]}" "$@"; }
status() { set +e; "$@" >"$work/out.log" 2>&1; local s=$?; set -e; echo $s; }
fail() { echo "FAIL: $*"; cat "$work/out.log" 2>/dev/null | tail -30; exit 1; }
# The keys a resume in out.log named as changed since its checkpoint, sorted.
changed_keys() { grep -oP 'WARN {4}\K\S+(?= .* -> )' "$work/out.log" | sort | xargs; }

case $case in
invariance)
  # Same global batch (8) on 1 rank (accumulation 2) and 2 ranks: the same
  # samples per step, so the same loss curve up to float summation order.
  common=(--set train.max_steps=20 --set train.global_batch=8 --set toy.dropout=0)
  run 1 "${common[@]}" --set train.out_dir=one >/dev/null
  run 2 "${common[@]}" --set train.out_dir=two >/dev/null
  "$compare" losses one/metrics.jsonl two/metrics.jsonl 1e-5
  # Every step of the 2-rank run says how long it waited for the all-reduce.
  steps=$(grep -c '"ms":' two/metrics.jsonl)
  [ "$steps" = 20 ] && [ "$(grep -c '"sync_wait_ms":[0-9]' two/metrics.jsonl)" = "$steps" ] ||
    fail "not every step of the 2-rank run has sync_wait_ms"
  ! grep -q sync_wait_ms one/metrics.jsonl || fail "a 1-rank run reports sync_wait_ms"
  "$compare" models one/models/final_model.h5 two/models/final_model.h5 1e-5
  ;;
resume)
  # 20 steps straight vs 10, SIGUSR1, resume to 20: bitwise equal weights.
  common=(--set train.max_steps=20 --set train.global_batch=8)
  run 2 "${common[@]}" --set train.out_dir=straight >/dev/null
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  [ -f split/checkpoints/step-00000010.h5 ] || fail "no checkpoint at step 10"
  run 2 "${common[@]}" --set train.out_dir=split >"$work/out.log" 2>&1
  # Only the test's own stop differs from the checkpoint's settings.
  [ "$(changed_keys)" = "toy.signal_at_call" ] || fail "changed settings named: $(changed_keys)"
  "$compare" models straight/models/final_model.h5 split/models/final_model.h5 0
  ;;
resume_drawn_seed)
  # train.seed = -1 draws a seed; a requeued run continues with the drawn one
  # (not a new draw that refuses the checkpoint), bitwise as a straight run
  # given that seed.
  common=(--set train.max_steps=20 --set train.global_batch=8)
  s=$(status run 2 "${common[@]}" --set train.seed=-1 --set train.out_dir=split --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  s=$(status run 2 "${common[@]}" --set train.seed=-1 --set train.out_dir=split)
  [ "$s" = 0 ] || fail "the requeued run exited $s"
  drawn=$(grep -oP 'train.seed = -1: continuing with the seed the run drew, \K[0-9]+' out.log) ||
    fail "the resume did not say it kept the drawn seed"
  run 2 "${common[@]}" --set train.seed="$drawn" --set train.out_dir=straight >/dev/null
  "$compare" models straight/models/final_model.h5 split/models/final_model.h5 0
  ;;
ema)
  # train.ema_decay keeps an average that a resume continues exactly, that is
  # not the live weights, and that the model files hold.
  common=(--set train.max_steps=20 --set train.global_batch=8 --set train.ema_decay=0.9)
  run 2 "${common[@]}" --set train.out_dir=straight >/dev/null
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=split >/dev/null
  last=checkpoints/step-00000020.h5
  "$compare" ema straight/$last split/$last 0
  "$compare" models straight/$last split/$last 0
  ! "$compare" ema-vs-model straight/$last - 1e-6 || fail "the EMA equals the live weights"
  "$compare" ema-vs-model straight/$last straight/models/final_model.h5 0 || fail "final_model is not the EMA"
  # A run that died after its last checkpoint, before its final model (killed,
  # out of disk): the rerun writes the model from that checkpoint, the EMA.
  rm split/models/final_model.h5
  run 2 "${common[@]}" --set train.out_dir=split >"$work/out.log" 2>&1
  grep -q "writing the final model it lacks" "$work/out.log" || fail "the rerun did not write the missing model"
  "$compare" models straight/models/final_model.h5 split/models/final_model.h5 0
  ;;
ema_bn)
  # train.ema_bn_batches gives the average batch-norm statistics of its own:
  # training (the live weights and the average) is bitwise as without it, the
  # evaluations and the model files are not.
  common=(--set train.max_steps=12 --set train.global_batch=8 --set train.ema_decay=0.9 --set toy.batch_norm=true
    --set train.eval_every=4)
  run 2 "${common[@]}" --set train.out_dir=live >/dev/null
  run 2 "${common[@]}" --set train.out_dir=own --set train.ema_bn_batches=3 >/dev/null
  last=checkpoints/step-00000012.h5
  "$compare" models live/$last own/$last 0 || fail "the statistics changed the live weights"
  "$compare" ema live/$last own/$last 0 || fail "the statistics changed the average"
  "$compare" losses live/metrics.jsonl own/metrics.jsonl 0
  evals() { cat "$@" | grep -o '"eval_loss":[^,}]*' | sort -u | wc -l; }
  [ "$(evals live/metrics.jsonl)" = 3 ] || fail "live run: not 3 evaluations"
  [ "$(evals live/metrics.jsonl own/metrics.jsonl)" = 6 ] ||
    fail "the evaluations did not change with the average's own statistics"
  ! "$compare" models live/models/final_model.h5 own/models/final_model.h5 0 ||
    fail "the final model kept the live statistics"
  ;;
eight_bit)
  # train.optimizer_state = "8bit": a hidden width of 1024 gives fc1 8192
  # weights (4 blocks, quantised) while fc2's 2048 stay fp32. The checkpoint
  # keeps the codes and scales; a preempted run resumes bitwise; the losses
  # follow fp32's; a checkpoint of fp32 moments resumes under "8bit",
  # converted and said so.
  common=(--set train.max_steps=20 --set toy.dropout=0 --set toy.hidden=1024 --set train.global_batch=8)
  last=checkpoints/step-00000020.h5
  run 2 "${common[@]}" --set train.out_dir=fp32 >/dev/null
  run 2 "${common[@]}" --set train.out_dir=q8 --set train.optimizer_state=8bit >/dev/null
  "$compare" losses fp32/metrics.jsonl q8/metrics.jsonl 0.002 || fail "8-bit moments' losses drift from fp32's"
  /usr/bin/python3 -c 'import h5py, sys; names = []; h5py.File(sys.argv[1]).visit(names.append)
sys.exit(not any(n.endswith("fc1.weight.exp_avg_sq.absmax") for n in names))' q8/$last ||
    fail "the checkpoint lacks the 8-bit moments' scales"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set train.optimizer_state=8bit --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=split --set train.optimizer_state=8bit >/dev/null
  "$compare" models q8/$last split/$last 0 || fail "the 8-bit resume differs"
  "$compare" optim q8/$last split/$last 0 || fail "the 8-bit resume's moments differ"
  s=$(status run 2 "${common[@]}" --set train.out_dir=convert --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted fp32 run exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=convert --set train.optimizer_state=8bit >"$work/out.log" 2>&1
  grep -q 'AdamW moments of 1 parameter converted to train.optimizer_state = "8bit"' "$work/out.log" ||
    fail "the resume did not say it converted the moments"
  "$compare" losses fp32/metrics.jsonl convert/metrics.jsonl 0.002 || fail "the converted resume drifts"
  # Sharded (fc1's weight is cut between the ranks at a block), bitwise as
  # unsharded: the runs quantise as the whole tensors do. "gradients"
  # without clipping (whose norm rounds apart, as in the shard case).
  run 2 "${common[@]}" --set train.out_dir=q8opt --set train.optimizer_state=8bit --set dist.shard=optimizer >/dev/null
  "$compare" models q8/$last q8opt/$last 0 || fail "sharded 8-bit weights differ"
  "$compare" optim q8/$last q8opt/$last 0 || fail "sharded 8-bit moments differ"
  for shard in none gradients; do
    run 2 "${common[@]}" --set train.out_dir=q8noclip-$shard --set train.optimizer_state=8bit --set train.grad_clip=0 \
      --set dist.shard=$shard >/dev/null
  done
  "$compare" models q8noclip-none/$last q8noclip-gradients/$last 0 || fail "8-bit moments with sharded gradients differ"
  # The sharded checkpoint resumed on 1 rank, unsharded.
  s=$(status run 2 "${common[@]}" --set train.out_dir=q8one --set train.optimizer_state=8bit --set dist.shard=optimizer \
    --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted sharded run exited $s, wanted 75"
  run 1 "${common[@]}" --set train.out_dir=q8one --set train.optimizer_state=8bit >/dev/null
  "$compare" losses q8/metrics.jsonl q8one/metrics.jsonl 0.002 || fail "the sharded 8-bit checkpoint resumed on 1 rank drifts"
  ;;
master_weights)
  # train.master_weights = "sharded", in bf16 (which autocast runs on the
  # CPU): fc1's and fc2's weights work in bf16, their fp32 masters sliced
  # over the ranks. Under dist.shard = "gradients" the run is the replicated
  # one to the bit (other cuts: tests/mpi/test_param_shards.cpp): the
  # forward rounds the same fp32 values to bf16 either way, and the
  # gradients reduce, clip and step in fp32 blocks alike. Checkpoints and
  # model files hold the fp32 masters; a preempted run resumes bitwise, and
  # each setting's checkpoint resumes under the other as if the run had had
  # that setting from the start. 1 rank accumulates its 2 micro-batches in
  # the fp32 blocks: the 2-rank curve up to summation order. Under
  # "optimizer" (whose all-reduce runs in bf16) and with 8-bit moments the
  # losses follow.
  common=(--set train.max_steps=20 --set toy.dropout=0 --set toy.hidden=64 --set train.global_batch=8
    --set train.precision=bf16 --set dist.shard=gradients)
  last=checkpoints/step-00000020.h5
  run 2 "${common[@]}" --set train.out_dir=rep2 >/dev/null
  run 2 "${common[@]}" --set train.out_dir=msh2 --set train.master_weights=sharded >/dev/null
  grep -q 'train.master_weights = "sharded": 640 of the 706 trainable elements work in bf16' msh2/logs/rank-0.log ||
    fail "the log does not say which weights work in bf16"
  "$compare" models rep2/$last msh2/$last 0 || fail "sharded masters differ from replicated weights"
  "$compare" optim rep2/$last msh2/$last 0 || fail "the moments differ"
  "$compare" models rep2/models/final_model.h5 msh2/models/final_model.h5 0 || fail "the final models differ"
  /usr/bin/python3 -c 'import h5py, sys
f = h5py.File(sys.argv[1])
sys.exit(not all(f["model"][n].dtype == "float32" for n in ("fc1.weight", "fc2.weight")))' msh2/$last ||
    fail "the checkpoint does not hold fp32 weights"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set train.master_weights=sharded --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=split --set train.master_weights=sharded >/dev/null
  "$compare" models msh2/$last split/$last 0 || fail "the resume differs"
  "$compare" optim msh2/$last split/$last 0 || fail "the resume's moments differ"
  for to in sharded replicated; do
    from=$([ $to = sharded ] && echo replicated || echo sharded)
    s=$(status run 2 "${common[@]}" --set train.out_dir=to-$to --set train.master_weights=$from --set toy.signal_at_call=10)
    [ "$s" = 75 ] || fail "preempted $from run exited $s, wanted 75"
    run 2 "${common[@]}" --set train.out_dir=to-$to --set train.master_weights=$to >"$work/out.log" 2>&1
    grep -q "train.master_weights \"$from\" -> \"$to\"" "$work/out.log" || fail "the resume did not name the change"
    "$compare" models rep2/$last to-$to/$last 0 || fail "$from resumed as $to differs"
  done
  run 2 "${common[@]}" --set dist.shard=optimizer --set train.out_dir=opt-rep >/dev/null
  run 2 "${common[@]}" --set dist.shard=optimizer --set train.out_dir=opt-msh --set train.master_weights=sharded >/dev/null
  "$compare" losses opt-rep/metrics.jsonl opt-msh/metrics.jsonl 0.002 || fail "dist.shard = optimizer drifts"
  run 1 "${common[@]}" --set train.out_dir=one --set train.master_weights=sharded >/dev/null
  "$compare" losses rep2/metrics.jsonl one/metrics.jsonl 1e-5 || fail "one rank's accumulation drifts"
  # With train.ema_decay the masters' slices are averaged (the rest by the
  # Ema): the "ema" set and the model files (the average) are the
  # replicated run's to the bit, and a preempted run resumes so.
  ema=(--set train.ema_decay=0.9)
  run 2 "${common[@]}" "${ema[@]}" --set train.out_dir=ema-rep >/dev/null
  run 2 "${common[@]}" "${ema[@]}" --set train.out_dir=ema-msh --set train.master_weights=sharded >/dev/null
  "$compare" ema ema-rep/$last ema-msh/$last 0 || fail "the average of sharded masters differs"
  "$compare" models ema-rep/models/final_model.h5 ema-msh/models/final_model.h5 0 || fail "the EMA's final models differ"
  s=$(status run 2 "${common[@]}" "${ema[@]}" --set train.out_dir=ema-split --set train.master_weights=sharded \
    --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted EMA run exited $s, wanted 75"
  run 2 "${common[@]}" "${ema[@]}" --set train.out_dir=ema-split --set train.master_weights=sharded >/dev/null
  "$compare" ema ema-rep/$last ema-split/$last 0 || fail "the resumed average differs"
  # Rank 1 runs out of memory in step 3's backward: the step is dropped and
  # run again at micro-batch 2, bitwise as a run that switched there.
  small=(--set train.max_steps=8 --set train.global_batch=16 --set dist.bucket_mb=0.0001 --set train.master_weights=sharded)
  s=$(status run 2 "${common[@]}" "${small[@]}" --set train.out_dir=oref --set toy.signal_at_call=3)
  [ "$s" = 75 ] || fail "preempted reference exited $s, wanted 75"
  run 2 "${common[@]}" "${small[@]}" --set train.out_dir=oref --set train.micro_batch=2 >/dev/null
  run 2 "${common[@]}" "${small[@]}" --set toy.oom_from_call=5 --set toy.oom_rank=1 --set toy.oom_above=2 \
    --set toy.oom_in=backward --set train.out_dir=oom >"$work/out.log" 2>&1 || fail "the out-of-memory run failed"
  grep -q "step 3 ran out of memory on 1 rank(s)" "$work/out.log" || fail "no back-off line"
  "$compare" models oref/models/final_model.h5 oom/models/final_model.h5 0 || fail "the back-off under masters differs"
  wide=(--set toy.hidden=1024 --set train.optimizer_state=8bit)
  run 2 "${common[@]}" "${wide[@]}" --set train.out_dir=q8-rep >/dev/null
  run 2 "${common[@]}" "${wide[@]}" --set train.out_dir=q8-msh --set train.master_weights=sharded >/dev/null
  "$compare" models q8-rep/$last q8-msh/$last 0 || fail "8-bit moments under sharded masters differ"
  ;;
shard)
  # dist.shard = "optimizer" (ZeRO-1): bitwise as unsharded on 2 and 3 ranks,
  # the moments in its checkpoints included; tiny buckets and a hidden width
  # of 100 cut tensors mid-way. "gradients" (ZeRO-2) as the notes below say.
  # Their checkpoints resume on any world size under any setting, and
  # continue bitwise under the same.
  common=(--set train.max_steps=20 --set toy.dropout=0 --set dist.bucket_mb=0.0005 --set toy.hidden=100)
  last=checkpoints/step-00000020.h5
  for n in 2 3; do
    run $n "${common[@]}" --set train.global_batch=$((4 * n)) --set train.out_dir=none$n >/dev/null
    run $n "${common[@]}" --set train.global_batch=$((4 * n)) --set train.out_dir=opt$n --set dist.shard=optimizer \
      >"$work/out.log" 2>&1
    grep -q "dist.shard = \"optimizer\": this rank updates [0-9]* of the 1102 trainable elements" opt$n/logs/rank-1.log ||
      fail "$n ranks: rank 1 does not say what it updates"
    "$compare" models none$n/$last opt$n/$last 0 || fail "$n ranks: sharded weights differ"
    "$compare" optim none$n/$last opt$n/$last 0 || fail "$n ranks: sharded moments differ"
    # "gradients": the clipping norm sums the ranks' blocks' squares, which
    # rounds apart from the norm of whole gradients.
    run $n "${common[@]}" --set train.global_batch=$((4 * n)) --set train.out_dir=grad$n --set dist.shard=gradients \
      >/dev/null
    grep -q "keeps their AdamW moments and gradients alone" grad$n/logs/rank-1.log || fail "$n ranks: gradients not sharded"
    "$compare" models none$n/$last grad$n/$last 1e-6 || fail "$n ranks: weights with sharded gradients differ"
  done
  # Without clipping, bitwise on 2 ranks; with accumulation, to float rounding
  # (each micro-step's average is summed, not the average of the sum).
  for shard in none gradients; do
    run 2 "${common[@]}" --set train.global_batch=8 --set train.grad_clip=0 --set train.out_dir=noclip-$shard \
      --set dist.shard=$shard >/dev/null
    run 2 "${common[@]}" --set train.global_batch=16 --set train.out_dir=accum-$shard --set dist.shard=$shard >/dev/null
  done
  "$compare" models noclip-none/$last noclip-gradients/$last 0 || fail "unclipped sharded gradients differ"
  "$compare" models accum-none/$last accum-gradients/$last 1e-6 || fail "accumulated sharded gradients differ"
  common+=(--set train.global_batch=8)
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set dist.shard=optimizer --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=split --set dist.shard=optimizer >/dev/null
  "$compare" models none2/$last split/$last 0 || fail "the sharded resume differs"
  "$compare" optim none2/$last split/$last 0 || fail "the sharded resume's moments differ"
  s=$(status run 2 "${common[@]}" --set train.out_dir=gsplit --set dist.shard=gradients --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  cp -r gsplit one
  cp -r gsplit four
  run 2 "${common[@]}" --set train.out_dir=gsplit --set dist.shard=gradients >/dev/null
  "$compare" models grad2/$last gsplit/$last 0 || fail "the resume with sharded gradients differs"
  # The checkpoint of sharded gradients on 2 ranks, resumed unsharded on 1
  # and with a sharded optimizer on 4 (micro-batches of 2).
  run 1 "${common[@]}" --set train.out_dir=one >/dev/null
  "$compare" models none2/$last one/$last 1e-5 || fail "resumed unsharded on 1 rank, it differs"
  run 4 "${common[@]}" --set train.out_dir=four --set dist.shard=optimizer --set train.micro_batch=2 >/dev/null
  "$compare" models none2/$last four/$last 1e-5 || fail "resumed with a sharded optimizer on 4 ranks, it differs"
  ;;
resume_other_world)
  # A 2-rank checkpoint resumed on 1 rank continues the same sample order.
  common=(--set train.max_steps=20 --set train.global_batch=8 --set toy.dropout=0)
  run 2 "${common[@]}" --set train.out_dir=straight >/dev/null
  s=$(status run 2 "${common[@]}" --set train.out_dir=moved --set toy.signal_at_call=10)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  run 1 "${common[@]}" --set train.out_dir=moved >/dev/null
  "$compare" losses straight/metrics.jsonl moved/metrics.jsonl 1e-5
  "$compare" models straight/models/final_model.h5 moved/models/final_model.h5 1e-5
  ;;
preempt_one_rank)
  # SIGUSR1 on rank 1 alone: every rank stops at the same step boundary.
  s=$(status run 2 --set train.max_steps=30 --set train.out_dir=p --set toy.signal_at_call=7 \
      --set toy.signal_rank=1)
  [ "$s" = 75 ] || fail "exited $s, wanted 75"
  [ -f p/checkpoints/step-00000007.h5 ] || fail "no checkpoint at step 7: $(ls p/checkpoints)"
  # Resumed with another rate: the log names the setting, both values and where
  # the new one came from.
  run 2 --set train.max_steps=30 --set train.out_dir=p --set train.lr=0.0123 >"$work/out.log" 2>&1
  grep -q "step-00000007.h5 was written with other settings" "$work/out.log" || fail "no warning of other settings"
  grep -q "train.lr 0.01 -> 0.0123 (--set)" "$work/out.log" || fail "the changed rate is not named"
  [ "$(changed_keys)" = "toy.signal_at_call toy.signal_rank train.lr" ] || fail "changed settings named: $(changed_keys)"
  [ -f p/models/final_model.h5 ] || fail "resumed run did not finish"
  [ -f p/checkpoints/step-00000030.h5 ] || fail "no final checkpoint"
  ;;
bad_input)
  s=$(status run 2 --set train.global_batch=12 --set train.micro_batch=4)
  [ "$s" = 2 ] || fail "global_batch 12 on 2 ranks x 4: exited $s"
  grep -q "train.global_batch" out.log || fail "message does not name train.global_batch"
  s=$(status run 1 --set train.precision=fp8)
  [ "$s" = 2 ] || fail "precision fp8: exited $s"
  grep -q "fp32|fp16|bf16|auto\|auto|fp32|fp16|bf16" out.log || fail "choices not listed"
  # A misspelt train.best_metric stops the run before it trains, listing the
  # metrics there are, on every rank; "none" keeps the final model alone.
  s=$(status run 2 --set train.max_steps=4 --set train.eval_every=2 --set train.best_metric=eval_los \
    --set train.out_dir=typo)
  [ "$s" = 2 ] || fail "best_metric eval_los: exited $s"
  grep -q 'train.best_metric = "eval_los" is not a metric this evaluation gives (eval_loss)' out.log ||
    fail "the message does not name the key and the metrics there are"
  [ ! -e typo ] || fail "a run with a misspelt metric wrote $(find typo -type f | head -3)"
  run 2 --set train.max_steps=4 --set train.eval_every=2 --set train.best_metric=none --set train.out_dir=last >/dev/null
  [ -f last/models/final_model.h5 ] && [ ! -e last/models/best_model.h5 ] ||
    fail "best_metric = none: want final_model.h5 alone, got $(ls last/models)"
  s=$(status run 1 --set train.resume=nowhere.h5)
  [ "$s" = 2 ] || fail "missing checkpoint: exited $s"
  grep -q "nowhere.h5" out.log || fail "missing checkpoint not named"
  # A checkpoint of another model: refused, and nothing in the run is touched.
  run 1 --set train.max_steps=4 --set train.out_dir=r >/dev/null
  before=$(cd r && find . -type f -exec md5sum {} + | sort)
  s=$(status run 1 --set train.max_steps=8 --set train.out_dir=r --set toy.hidden=16)
  [ "$s" = 2 ] || fail "mismatched checkpoint: exited $s"
  grep -q "fc1.weight" out.log || fail "mismatch message does not name the tensor"
  after=$(cd r && find . -type f -not -path './logs/*' -exec md5sum {} + | sort)
  [ "$(grep -v './logs/' <<<"$before")" = "$after" ] || fail "files changed by a refused resume"
  s=$(status run 1 --set train.max_steps=8 --set train.out_dir=r --set train.resume=none)
  [ "$s" = 2 ] || fail "resume=none over checkpoints: exited $s"
  ;;
damaged_checkpoint)
  # A flipped bit in the newest checkpoint's weights: resume = "auto" says so,
  # goes back one checkpoint, and still ends bitwise where an uninterrupted
  # run ends. h5py finds where the tensor's bytes lie.
  /usr/bin/python3 -c 'import h5py' 2>/dev/null || fail "needs h5py for /usr/bin/python3 (env/setup.sh --tests)"
  common=(--set train.max_steps=20 --set train.global_batch=8 --set train.ckpt_every=5)
  run 2 "${common[@]}" --set train.out_dir=straight >/dev/null
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set toy.signal_at_call=15)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  newest=split/checkpoints/step-00000015.h5
  /usr/bin/python3 - "$newest" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    at = f["model/fc1.weight"].id.get_chunk_info(0).byte_offset + 3
with open(sys.argv[1], "r+b") as f:
    f.seek(at)
    byte = f.read(1)[0]
    f.seek(at)
    f.write(bytes([byte ^ 0x10]))
PY
  # Named by the user, the damaged file is refused before any work (exit 2).
  s=$(status run 2 "${common[@]}" --set train.out_dir=named --set train.resume="$newest")
  [ "$s" = 2 ] || fail "resume = the damaged file exited $s, wanted 2"
  grep -q "$newest: dataset 'model/fc1.weight': cannot read .*Fletcher32 checksum" out.log ||
    fail "the damaged file and tensor are not named"
  [ ! -e named/models ] && [ ! -e named/checkpoints ] || fail "a refused resume wrote models or checkpoints"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split)
  [ "$s" = 0 ] || fail "resume past a damaged checkpoint exited $s"
  grep -q "passing over $newest, which does not read back whole: .*model/fc1.weight.*Fletcher32 checksum" out.log \
    || fail "the damaged checkpoint was not named with its tensor"
  grep -q "resumed from split/checkpoints/step-00000010.h5 at step 10" out.log || fail "did not resume from step 10"
  "$compare" models straight/models/final_model.h5 split/models/final_model.h5 0
  ;;
nonfinite)
  s=$(status run 1 --set train.max_steps=20 --set train.out_dir=n --set train.ckpt_every=5 \
      --set toy.nan_from_call=8 --set train.max_bad_steps=3)
  [ "$s" = 1 ] || fail "exited $s, wanted 1"
  grep -q "step 10: loss or gradients not finite for 3 steps" out.log || fail "message"
  [ -f n/checkpoints/step-00000005.h5 ] || fail "last good checkpoint lost"
  ;;
oom_backoff)
  # (Evaluation's back-off is at the end.) Rank 1 runs out of memory in step 3 (forward passes 5-6 at micro-batch 4
  # x accumulation 2), in forward, then in backward while rank 0's buckets
  # are under way: every rank drops the step and runs it again at micro-batch
  # 2, which the rest of the run keeps. Its model is a run's that switched
  # to micro-batch 2 at that step (preempted there, resumed so).
  common=(--set train.max_steps=8 --set train.global_batch=16 --set toy.dropout=0 --set dist.bucket_mb=0.0001)
  oom=(--set toy.oom_from_call=5 --set toy.oom_rank=1 --set toy.oom_above=2)
  s=$(status run 2 "${common[@]}" --set train.out_dir=ref --set toy.signal_at_call=3)
  [ "$s" = 75 ] || fail "preempted reference exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=ref --set train.micro_batch=2 >/dev/null
  # Forward pass 5 accumulates; 6 synchronises, and in its backward rank 0's
  # first buckets are on their way when the failure comes.
  for where in "forward 5 1" "backward 5 1" "backward 6 1" "backward 6 -1"; do
    read -r in call rank <<<"$where"
    s=$(status run 2 "${common[@]}" "${oom[@]}" --set toy.oom_in=$in --set toy.oom_from_call=$call \
        --set toy.oom_rank=$rank --set train.out_dir=oom)
    [ "$s" = 0 ] || fail "out of memory in $where: exited $s"
    ranks=$([ "$rank" = -1 ] && echo 2 || echo 1)
    grep -q "step 3 ran out of memory on $ranks rank(s) at train.micro_batch 4 x accumulation 2: the step is dropped and run again with micro-batch 2 x accumulation 4" out.log ||
      fail "out of memory in $where: no back-off line"
    "$compare" models ref/models/final_model.h5 oom/models/final_model.h5 1e-6 || fail "out of memory in $where"
    rm -rf oom
  done
  # With sharded gradients every micro-step reduce-scatters: a rank that fails
  # in the first of two takes its part in the second's too.
  common+=(--set dist.shard=gradients)
  s=$(status run 2 "${common[@]}" --set train.out_dir=gref --set toy.signal_at_call=3)
  [ "$s" = 75 ] || fail "preempted reference exited $s, wanted 75"
  run 2 "${common[@]}" --set train.out_dir=gref --set train.micro_batch=2 >/dev/null
  for in in forward backward; do
    s=$(status run 2 "${common[@]}" "${oom[@]}" --set toy.oom_in=$in --set train.out_dir=oom)
    [ "$s" = 0 ] || fail "sharded gradients, out of memory in $in 5: exited $s"
    "$compare" models gref/models/final_model.h5 oom/models/final_model.h5 1e-6 || fail "sharded, out of memory in $in"
    rm -rf oom
  done
  common=("${common[@]:0:${#common[@]}-2}")
  # Out of memory at every size: micro-batch 4, 2, 1, then exit 1 after a
  # checkpoint of the last good step, which a resume continues at micro-batch 1.
  s=$(status run 2 "${common[@]}" "${oom[@]}" --set toy.oom_above=0 --set train.out_dir=dead)
  [ "$s" = 1 ] || fail "out of memory at micro-batch 1 exited $s, wanted 1"
  grep -q "step 3 ran out of memory on 1 rank(s) at train.micro_batch 1 x accumulation 8, and there is no smaller micro-batch; the checkpoint of step 2 keeps the run" out.log ||
    fail "no message at micro-batch 1"
  [ -f dead/checkpoints/step-00000002.h5 ] || fail "no checkpoint of the last good step"
  cp -r dead recomputing
  s=$(status run 2 "${common[@]}" --set train.out_dir=dead)
  [ "$s" = 0 ] || fail "the resume exited $s"
  grep -q "continuing with micro-batch 1 x accumulation 8: the run ran out of memory at a larger one with these settings" out.log ||
    fail "the resume did not keep micro-batch 1"
  # Under other settings, which may fit more, the run starts at its own.
  s=$(status run 2 "${common[@]}" --set train.out_dir=recomputing --set train.recompute=blocks)
  [ "$s" = 0 ] && grep -q "ran out of memory above micro-batch 1 with .*; this run has .*recompute = \"blocks\".*, and starts at its own micro-batch" out.log ||
    fail "a resume with other settings kept the smaller micro-batch (exited $s)"
  # Evaluation out of memory on rank 1 above 2 samples: every rank
  # evaluates again at half the micro-batch (4 -> 2), logged once; the next
  # evaluation starts at 2; the figures are those of a run that never ran out.
  ev=(--set train.max_steps=4 --set train.eval_every=2 --set train.micro_batch=4)
  run 2 "${common[@]}" "${ev[@]}" --set train.out_dir=eref >/dev/null
  s=$(status run 2 "${common[@]}" "${ev[@]}" --set toy.oom_in=eval --set toy.oom_from_call=1 --set toy.oom_rank=1 \
      --set toy.oom_above=2 --set train.out_dir=eoom)
  [ "$s" = 0 ] || fail "out of memory in evaluation: exited $s"
  [ "$(grep -c "evaluation ran out of memory at micro-batch 4 on a rank: evaluating again at 2" out.log)" = 1 ] ||
    fail "no evaluation back-off line, or one at each evaluation"
  python3 - eref/metrics.jsonl eoom/metrics.jsonl <<'PY' || fail "the evaluation that backed off differs"
import json, sys
evals = [{r["step"]: r["eval_loss"] for r in map(json.loads, open(p)) if "eval_loss" in r} for p in sys.argv[1:]]
assert sorted(evals[0]) == [2, 4] and evals[0].keys() == evals[1].keys(), evals
for step, ref in evals[0].items():
    assert abs(evals[1][step] - ref) <= 1e-6 * abs(ref), (step, ref, evals[1][step])
PY
  ;;
micro_batch_auto)
  # The largest micro-batch whose plan fits: with little activation memory,
  # a rank's whole share (and the first step's check warns that the plan is
  # far over its peak); with more than any device has, exit 2 before any
  # work, with the figures.
  common=(--set train.max_steps=2 --set train.global_batch=16 --set train.micro_batch=auto)
  run 2 "${common[@]}" --set toy.activation_mb=1 --set train.out_dir=fits >"$work/out.log" 2>&1 || fail "exited $?"
  grep -q 'train.micro_batch = "auto": 8 x accumulation 1' out.log || fail "did not pick micro-batch 8"
  grep -q '"micro_batch":8' fits/metrics.jsonl || fail "metrics.jsonl's plan row"
  # toy.activation_mb's 1 MB a sample is far over what the toy keeps: the
  # first step's check says so, with the terms.
  grep -q "memory: the plan for the first step's shapes ([0-9]* MB) is [0-9]*% over its measured peak .*the task's activation estimate 8 as backward starts" out.log ||
    fail "no warning of a plan far over the first step's peak"
  s=$(status run 2 "${common[@]}" --set train.global_batch=0 --set train.out_dir=unset)
  [ "$s" = 2 ] && grep -q 'train.micro_batch = "auto" splits a rank.s share of train.global_batch, which is not set' out.log ||
    fail "auto without a global batch: exited $s"
  s=$(status run 2 "${common[@]}" --set train.out_dir=none)
  [ "$s" = 2 ] && grep -q 'needs an estimate of the model.s activations' out.log || fail "no estimate: exited $s"
  s=$(status run 2 "${common[@]}" --set toy.activation_mb=1e9 --set train.recompute=auto --set train.out_dir=huge)
  [ "$s" = 2 ] || fail "too large: exited $s, wanted 2"
  grep -q 'the run does not fit even at micro-batch 1 (recompute blocks): it plans .* MB per rank' out.log ||
    fail "too large: no figures"
  grep -q 'No one setting makes it fit' out.log || fail "too large: no way out named"
  [ ! -e huge/checkpoints ] || fail "too large: wrote checkpoints"
  ;;
early_stop)
  # eval_loss falls by far less than min_delta 100, so only the first
  # evaluation (step 2) is an improvement: with patience 2 the run stops
  # after the one at step 6, on both ranks together, as a finished run. A run preempted between the
  # evaluations of steps 4 and 6 keeps its patience: it stops at 6 too, with
  # the same model; run again, it has nothing to do.
  common=(--set train.max_steps=20 --set train.global_batch=8 --set train.eval_every=2
          --set train.early_stop_min_delta=100 --set train.early_stop_patience=2)
  s=$(status run 2 "${common[@]}" --set train.out_dir=straight)
  [ "$s" = 0 ] || fail "exited $s"
  grep -q "stopping early at step 6 of 20: eval_loss has not improved on .* by more than 100 for 2 evaluations" out.log ||
    fail "no early-stop line"
  grep -q '"step":6,"stopped":"early_stop"' straight/metrics.jsonl || fail "metrics.jsonl does not say why it ended"
  [ -f straight/models/final_model.h5 ] && [ -f straight/models/best_model.h5 ] || fail "models missing"
  [ "$(ls straight/checkpoints)" = "$(printf 'step-00000006.h5')" ] || fail "checkpoints: $(ls straight/checkpoints | xargs)"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set toy.signal_at_call=5)
  [ "$s" = 75 ] || fail "preempted run exited $s, wanted 75"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split)
  [ "$s" = 0 ] && grep -q "stopping early at step 6 of 20" out.log || fail "the requeued run did not stop at step 6"
  "$compare" models straight/models/final_model.h5 split/models/final_model.h5 0
  s=$(status run 2 "${common[@]}" --set train.out_dir=split)
  [ "$s" = 0 ] && grep -q "nothing to do: the checkpoint is at step 6 and the run stopped early there" out.log ||
    fail "a stopped run trained on when run again"
  # With more patience (or none asked for) it trains on: patience 3 stops at
  # the next evaluation, step 8; then early stopping off runs the schedule out.
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set train.early_stop_patience=3)
  [ "$s" = 0 ] && grep -q "the run stopped early at step 6 after 2 evaluations without improvement; with train.early_stop_patience = 3 it trains on" out.log &&
    grep -q "stopping early at step 8 of 20" out.log || fail "patience 3 did not train on to step 8"
  s=$(status run 2 "${common[@]}" --set train.out_dir=split --set train.early_stop_patience=0)
  [ "$s" = 0 ] && grep -q "with train.early_stop_patience = 0 it trains on" out.log &&
    [ -f split/checkpoints/step-00000020.h5 ] || fail "early stopping off did not run the schedule out"
  s=$(status run 2 "${common[@]}" --set train.best_metric=none --set train.out_dir=none)
  [ "$s" = 2 ] && grep -q 'train.early_stop_patience = 2 watches train.best_metric, which is "none": name one of eval_loss' out.log ||
    fail "patience without a metric: exited $s"
  # A direction against the metric's would keep the worst model.
  s=$(status run 2 "${common[@]}" --set train.best_mode=max --set train.out_dir=max)
  [ "$s" = 2 ] && grep -q 'train.best_mode = "max" would keep the worst eval_loss: a smaller one is better, so set train.best_mode = "min"' out.log ||
    fail "best_mode max on eval_loss: exited $s"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
echo "PASS: $case"
