"""call.py LIB -- load a shared object made from a generated object and
call lin_grad through ctypes (no NumPy needed)."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
F4 = ctypes.c_float * 4
x, w, one = F4(1, 2, 3, 4), F4(0.5, -1, 2, 0.25), ctypes.c_float(1)
loss, dw = ctypes.c_float(0), F4()
ins = (ctypes.c_void_p * 3)(ctypes.addressof(x), ctypes.addressof(w),
                            ctypes.addressof(one))
outs = (ctypes.c_void_p * 2)(ctypes.addressof(loss), ctypes.addressof(dw))
lib.lin_grad.restype = ctypes.c_int
rc = lib.lin_grad(ins, outs, None)
got = [loss.value] + list(dw)
want = [14.5, 1, -4, 12, 2]
ok = rc == 0 and all(abs(a - b) <= 1e-5 for a, b in zip(got, want))
print("rc=%d loss and dw=%s: %s" % (rc, got, "ok" if ok else "WRONG"))
sys.exit(0 if ok else 1)
