python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
rm -rf /tmp/site/scalesim; cp -r scalesim /tmp/site/ && cp -r calibration /tmp/site/scalesim/calibration && cp -r app /tmp/site/scalesim/app
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S='import sys; from scalesim.cli.main import main; sys.exit(main(sys.argv[1:]))'
cd /tmp
echo "== two processes on one GPU, after the fix" > $OUT/shared-gpu.log
timeout 120 python3 -P -c "$S" calibrate --nproc-per-node 2 --quick --no-progress --phases compute,collectives --timeout 60 --state-dir /tmp/st-2 --out $OUT/two.json >> $OUT/shared-gpu.log 2>&1
echo "exit $?" >> $OUT/shared-gpu.log
echo "== the same under torchrun directly" >> $OUT/shared-gpu.log
timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 -m scalesim.calibration --quick --no-progress --phases compute --state-dir /tmp/st-3 --out $OUT/three.json >> $OUT/shared-gpu.log 2>&1
echo "exit $?" >> $OUT/shared-gpu.log
cat $OUT/shared-gpu.log
