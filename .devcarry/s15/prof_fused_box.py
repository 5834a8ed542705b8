import cProfile, pstats, numpy as np, metalcall as mc, metalcall.numpy as mnp
dev = mc.Device("cpu"); mnp.set_default_device(dev)
x = mnp.asarray(np.random.rand(1000).astype(np.float32)); y = mnp.asarray(np.random.rand(1000).astype(np.float32))
def f():
    for _ in range(20000): (mnp.sin(x)*y+2).evaluate()
f()
cProfile.run("f()", "/tmp/p1.out")
pstats.Stats("/tmp/p1.out").sort_stats("tottime").print_stats(30)
