python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
rm -rf /tmp/site/scalesim; cp -r scalesim /tmp/site/ && cp -r calibration /tmp/site/scalesim/calibration && cp -r app /tmp/site/scalesim/app
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S='import sys; from scalesim.cli.main import main; sys.exit(main(sys.argv[1:]))'
cd /tmp
for h in 2048 8192; do
  timeout 120 python3 -P -c "$S" calibrate --no-progress --phases compute --precision bf16 --model gpt --width 256 --depth 2 --seq-len 256 --vocab 1024 --batches 4,8,16,32 --block-hidden $h --block-seq 2048 --block-tp 1,2,4,8 --state-dir /tmp/st$h --out $OUT/block-h$h.json > $OUT/block-h$h.log 2>&1
  echo "exit $?" >> $OUT/block-h$h.log
done
grep -A6 "^block" $OUT/block-h*.log
