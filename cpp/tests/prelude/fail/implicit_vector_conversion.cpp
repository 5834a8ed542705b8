// expect: conversion
#include "metal_stdlib.h"
mtl_float3 f(mtl_int3 v) { return v; }  // MSL needs float3(v)
