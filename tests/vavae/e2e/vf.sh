#!/usr/bin/env bash
# vf.sh VAVAE FIXTURE VF_FIXTURE MPIEXEC JOB FASHION_MNIST WORK: train-vae as
# a VA-VAE under two ranks, aligned with stand-in foundation features
# (tests/vavae/fixture/vf_features.cpp): it trains (the VF loss takes its own
# gradients inside the step, which the gradient sync must not count; also
# under sharded masters in bf16), extract
# then encodes with the trained model (its projection left out), and a
# missing or misshapen features file stops the run at the door (exit 2)
# before anything is written. Exits 77 (skipped) without Fashion-MNIST.
set -uo pipefail
vavae=$1 fixture=$2 vf_fixture=$3 mpiexec=$4 job=$5 src=$6 work=$7
rm -rf "$work"
"$fixture" "$src" "$work/data_split" 3 16 4 32
status=$?
[ "$status" = 0 ] || exit "$status"
fail() { echo "FAIL: $*"; exit 1; }
"$vf_fixture" "$work/data_split" "$work/vf.h5" 6 8 || fail "vf_features fixture failed"
"$vf_fixture" "$work/data_split" "$work/vf-4x4.h5" 6 4 || fail "vf_features fixture failed"
common=(--config "$job" --data-root "$work/data_split" --set vae.max_steps=4 --set vae.micro_batch=4)

log=$("$mpiexec" -n 2 "$vavae" train-vae "${common[@]}" --run-dir "$work/out" --set vae.vf_features="$work/vf.h5" 2>&1)
status=$?
printf '%s\n' "$log"
[ "$status" = 0 ] || fail "train-vae with VF features exited with $status"
grep -q "aligned with 6-channel features of $work/vf.h5" <<<"$log" || fail "train-vae did not say it aligns"
[ -s "$work/out/vae/vae.safetensors" ] || fail "no vae.safetensors"
"$mpiexec" -n 2 "$vavae" extract "${common[@]}" --run-dir "$work/out" 2>&1 || fail "extract with the VA-VAE failed"
[ -s "$work/out/latent_features/train.h5" ] || fail "extract wrote no latents"
# Under train.master_weights = "sharded" the layers the VF loss runs in fp32
# (the encoder's conv_out, the projection) keep fp32 weights; in bf16 they
# met an fp32 input (Task::fp32_weights).
"$mpiexec" -n 2 "$vavae" train-vae "${common[@]}" --run-dir "$work/masters" --set vae.vf_features="$work/vf.h5" \
  --set train.precision=bf16 --set dist.shard=gradients --set train.master_weights=sharded 2>&1 ||
  fail "train-vae with VF features under sharded masters failed"

expect_refusal() { # expect_refusal MESSAGE FEATURES
  local out status
  out=$("$vavae" train-vae "${common[@]}" --run-dir "$work/bad" --set vae.vf_features="$2" 2>&1)
  status=$?
  [ "$status" = 2 ] || fail "vae.vf_features=$2: exit $status, expected 2: $out"
  grep -qF "$1" <<<"$out" || fail "vae.vf_features=$2: no '$1' in: $out"
  [ ! -e "$work/bad" ] || fail "a refused train-vae wrote $work/bad"
}
expect_refusal "vae.vf_features: $work/missing.h5 not found" "$work/missing.h5"
expect_refusal "is [6,4,4], expected [C,8,8]" "$work/vf-4x4.h5"
echo PASS
