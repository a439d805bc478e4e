"""A file mapping that holds nothing but the mapping (libc mmap through ctypes).

Python's own mmap.mmap keeps a dup() of the descriptor, so closing the caller's descriptor
would still leave an open file behind: tests that mean "only a mapping holds the file" use
this instead.
"""
import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PROT_READ, PROT_WRITE, MAP_SHARED, MS_SYNC = 1, 2, 1, 4


class Mapping:
    """The whole of PATH mapped shared; the descriptor is closed before this returns."""

    def __init__(self, path, writable=False):
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        try:
            self.size = os.fstat(fd).st_size
            prot = PROT_READ | (PROT_WRITE if writable else 0)
            addr = _libc.mmap(None, self.size, prot, MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "mmap " + path)
            self.addr = addr
        finally:
            os.close(fd)

    def read(self):
        return ctypes.string_at(self.addr, self.size)

    def write(self, off, data):
        ctypes.memmove(self.addr + off, data, len(data))
        if _libc.msync(self.addr, self.size, MS_SYNC) != 0:
            raise OSError(ctypes.get_errno(), "msync")

    def close(self):
        _libc.munmap(self.addr, self.size)
