"""Every dtype name torch.profiler writes in a trace's 'Input type' has its element size, so a
gloo collective of int64, uint8, int8, int16, fp8 or complex tensors counts its bytes (before,
'long int' and the other C++ names read as unknown and their messages as 0 bytes)."""

import json

import torch
from torch.profiler import profile

from scalesim.trace_comm_calls import dtype_bytes

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn,
          torch.float8_e5m2, torch.complex64, torch.complex128]


def test_each_input_type_the_profiler_writes_has_the_tensors_element_size(tmp_path):
    with profile(record_shapes=True) as prof:
        for dtype in DTYPES:
            torch.zeros(3, dtype=dtype).clone()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    clones = [e for e in json.loads(path.read_text())["traceEvents"]
              if e.get("name") == "aten::clone"]
    names = [e["args"]["Input type"][0] for e in clones]
    assert len(names) == len(DTYPES)
    assert {name: dtype_bytes(name) for name in names} == {
        name: dtype.itemsize for name, dtype in zip(names, DTYPES, strict=True)}
    assert "long int" in names and dtype_bytes("long int") == 8
