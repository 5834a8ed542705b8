#!/usr/bin/env bash
# Session 16's second H200 call (a new instance): the first call's script again (the whole CUDA
# table, the foreign-argument decomposition, the CUDA suite) after bb7a75f's CuPy change.
exec bash .devcarry/s16/run1.sh
