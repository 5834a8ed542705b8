"""Session 16: three torch CPU tensors against own Buffers as arguments of a 1-element kernel on the
CPU device (best of 9 x 20000 statement calls, twice); needs torch (CPU build is enough)."""
import torch, metalcall as mc, numpy as np, time
dev = mc.Device('cpu')
k = dev.compile('kernel void mul(device float* a [[buffer(0)]], device float* b [[buffer(1)]], device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i]*b[i]; }')['mul']
a,b,c = (torch.full((1,),2.0) for _ in range(3))
A,B,C = (dev.buffer(np.ones(1,np.float32)) for _ in range(3))
k(1,a,b,c); assert c.item() == 4
def t(f, n=20000):
    best=1e9
    for r in range(9):
        t0=time.perf_counter()
        for _ in range(n): f()
        best=min(best,(time.perf_counter()-t0)/n)
    return best*1e6
for r in range(2):
  print('own %.3f torch %.3f' % (t(lambda: k(1,A,B,C)), t(lambda: k(1,a,b,c))))
