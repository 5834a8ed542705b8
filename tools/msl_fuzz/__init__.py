"""Differential fuzzing of metalcall's MSL front end.

The generator writes random valid MSL compute kernels and a NumPy model of each (its
own evaluation of the same tree with MSL's semantics, independent of the translator);
the runner compiles them many to a library on a metalcall device and compares every
output buffer. docs/design.md, "Differential fuzzing", says what it covers.
"""
