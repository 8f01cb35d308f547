#!/usr/bin/env python3
"""Runs a command under a seccomp filter that inspects a system call's first argument.

A real kernel-side slowdown of known direction for scripts/ab.sh: the filter runs for every
system call of the command and of everything it starts (sysperf's workers included), and,
because it reads an argument, the kernel cannot cache its verdict per system call (its
constant-action bitmap covers only filters that never look at arguments). Every call is
allowed; each costs AB_CHECKS (default 8) loads and compares more.

Usage: seccomp_wrap.py COMMAND [ARG...]        (AB_CHECKS=N to change the cost)
"""
import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
BPF_LD_W_ABS = 0x00 | 0x00 | 0x20
BPF_JMP_JEQ_K = 0x05 | 0x10 | 0x00
BPF_RET_K = 0x06 | 0x00
SECCOMP_RET_ALLOW = 0x7FFF0000
ARG0 = 16  # offsetof(struct seccomp_data, args[0])


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: seccomp_wrap.py COMMAND [ARG...]")
    checks = int(os.environ.get("AB_CHECKS", "8"))
    insns = []
    for i in range(checks):
        insns.append((BPF_LD_W_ABS, 0, 0, ARG0))
        # Both branches go on to the next check: the comparison is work, not a decision.
        insns.append((BPF_JMP_JEQ_K, 0, 0, 0x5EC0_0000 + i))
    insns.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    prog = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *x) for x in insns))
    fprog = SockFprog(len(insns), ctypes.addressof(prog))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        sys.exit(f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}")
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
