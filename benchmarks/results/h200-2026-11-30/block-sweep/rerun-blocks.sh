set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
rm -rf /tmp/site/scalesim; cp -r scalesim /tmp/site/ && cp -r calibration /tmp/site/scalesim/calibration && cp -r app /tmp/site/scalesim/app
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
S='import sys; from scalesim.cli.main import main; sys.exit(main(sys.argv[1:]))'
python3 -P - > $OUT/ceilings.txt 2>&1 <<'PY'
import torch
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16); b=torch.randn_like(a)
for _ in range(3): a@b
s,e=torch.cuda.Event(True),torch.cuda.Event(True); s.record()
for _ in range(20): a@b
e.record(); torch.cuda.synchronize(); print('matmul 8192^3 bf16 TFLOP/s', 20*2*8192**3/(s.elapsed_time(e)/1e3)/1e12)
x=torch.empty(2**30,device='cuda',dtype=torch.float32); y=torch.empty_like(x)
for _ in range(3): y.copy_(x)
s.record()
for _ in range(10): y.copy_(x)
e.record(); torch.cuda.synchronize(); print('copy GB/s (read+write)', 10*2*4*2**30/(s.elapsed_time(e)/1e3)/1e9)
PY
for bb in 2 8 32; do
  timeout 100 python3 -P -c "$S" calibrate --no-progress --phases compute --precision bf16 --model gpt --width 256 --depth 2 --seq-len 256 --vocab 1024 --batches 4,8,16,32 --block-hidden 4096 --block-seq 2048 --block-batch $bb --block-tp 1,2,4,8 --state-dir /tmp/st$bb --out $OUT/block-b$bb.json > $OUT/block-b$bb.log 2>&1
  echo "exit $?" >> $OUT/block-b$bb.log
done
cat $OUT/ceilings.txt; grep -A6 "^block" $OUT/block-b*.log; tail -3 $OUT/block-b*.log
