# Sourced by the e2e scripts that run apps/carotid on the real BreastMNIST
# ultrasound images, after they set `data` and `work`: fail(), a skip (exit
# 77) when ../shared/data is absent, an empty $work, and `breast`, the
# arguments that point a run at the images at 28 pixels, gray, through the
# ImageNet stem, with its image cache in $work so no test reads another's. pass() ends a test that
# passed and removes $work: its models and checkpoints are hundreds of MB a
# test, which a CI disk need not hold; a failure keeps them to look at.
fail() { echo "FAIL: $*"; exit 1; }
pass() { rm -rf "$work"; echo PASS; }
[ -f "$data/label.xlsx" ] || { echo "SKIP: $data/label.xlsx absent (../shared/data)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
# The ImageNet stem (7x7 stride 2, max-pool) takes 28 pixels to 7 at once:
# 16x less compute than the small stem "auto" picks below 96 pixels, and these
# tests check what runs produce (splits, reports, ensembles, resumes), not how
# well they learn (tests/unit's nn_resnet covers the small stem).
breast=(--root-dir "$data/images" --label-excel "$data/label.xlsx" --set data.channels=1
        --image-size 28 --batch-size 32 --lr 1e-3 --set data.cache_dir="$work/cache" --set model.stem=imagenet)
