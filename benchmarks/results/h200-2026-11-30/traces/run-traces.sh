python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
rm -rf /tmp/site/scalesim; cp -r scalesim /tmp/site/ && cp -r calibration /tmp/site/scalesim/calibration && cp -r app /tmp/site/scalesim/app
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/gpu_trace.py --out-dir $OUT > $OUT/trace.log 2>&1; echo "exit $?" >> $OUT/trace.log
cat $OUT/trace.log | grep -v USDT | tail -20; ls -la $OUT
