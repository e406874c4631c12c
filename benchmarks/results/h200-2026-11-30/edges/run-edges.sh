python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
rm -rf /tmp/site/scalesim; cp -r scalesim /tmp/site/ && cp -r calibration /tmp/site/scalesim/calibration && cp -r app /tmp/site/scalesim/app
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S='import sys; from scalesim.cli.main import main; sys.exit(main(sys.argv[1:]))'
cd /tmp
echo "== OOM ceiling" > $OUT/gpu-edges.log
timeout 150 python3 -P -c "$S" calibrate --no-progress --phases compute --precision bf16 --model gpt --width 4096 --depth 4 --seq-len 4096 --vocab 32000 --batches 4,16,64,256 --repeats 3 --warmup 1 --state-dir /tmp/st-oom --out $OUT/oom.json >> $OUT/gpu-edges.log 2>&1
echo "exit $?" >> $OUT/gpu-edges.log
echo "== two processes on one GPU" >> $OUT/gpu-edges.log
timeout 150 python3 -P -c "$S" calibrate --nproc-per-node 2 --quick --no-progress --phases compute,collectives --timeout 60 --state-dir /tmp/st-2 --out $OUT/two.json >> $OUT/gpu-edges.log 2>&1
echo "exit $?" >> $OUT/gpu-edges.log
cat $OUT/gpu-edges.log | cut -c1-400 | tail -60
