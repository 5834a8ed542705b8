// Matrices: floatCxR is C columns of floatR, as in MSL.
#include "metal_stdlib.h"
#include "check.h"

using namespace metal;

static bool same_mat(const mtl_float3x3& a, const mtl_float3x3& b) { return a == b; }

int main() {
  mtl_float3x3 id = mtl_float3x3(1.0f);
  CHECK(id[0][0] == 1 && id[1][1] == 1 && id[2][2] == 1 && id[0][1] == 0 && id[2][0] == 0);
  mtl_float3x3 m = mtl_float3x3(mtl_float3(1, 2, 3), mtl_float3(4, 5, 6), mtl_float3(7, 8, 10));
  CHECK(m[1][2] == 6 && m[2].z == 10);  // column 1, row 2
  mtl_float2x2 s = mtl_float2x2(1, 2, 3, 4);  // scalars, column-major
  CHECK(s[0][1] == 2 && s[1][0] == 3);
  mtl_float2x3 r = mtl_float2x3(mtl_float3(1, 2, 3), mtl_float3(4, 5, 6));  // 2 columns, 3 rows
  CHECK(sizeof(r) == 32 && r[1].x == 4);
  mtl_float4x4 zero = mtl_float4x4();
  CHECK(zero[3][3] == 0);

  CHECK(same_mat(m * id, m) && same_mat(id * m, m));
  mtl_float3 v = mtl_float3(1, 1, 1);
  CHECK(same_vec(m * v, mtl_float3(12, 15, 19), 3));  // sum of columns
  CHECK(same_vec(v * m, mtl_float3(6, 15, 25), 3));   // column sums
  mtl_float3x2 rect = mtl_float3x2(mtl_float2(1, 2), mtl_float2(3, 4), mtl_float2(5, 6));  // 3 columns of float2
  mtl_float2 rv = rect * mtl_float3(1, 0, 1);
  CHECK(same_vec(rv, mtl_float2(6, 8), 2));
  mtl_float3 lv = mtl_float2(1, 1) * rect;
  CHECK(same_vec(lv, mtl_float3(3, 7, 11), 3));
  mtl_float2x2 p = rect * r;  // (3 cols x 2 rows) * (2 cols x 3 rows) = 2x2
  CHECK(p[0][0] == 1 * 1 + 3 * 2 + 5 * 3 && p[0][1] == 2 * 1 + 4 * 2 + 6 * 3);
  CHECK(p[1][0] == 1 * 4 + 3 * 5 + 5 * 6 && p[1][1] == 2 * 4 + 4 * 5 + 6 * 6);

  mtl_float3x3 t = transpose(m);
  CHECK(t[0][1] == 4 && t[2][0] == 3 && t[1][2] == 8);
  mtl_float2x3 rt = transpose(rect);
  CHECK(rt[0].z == 5 && rt[1].y == 4);
  CHECK(determinant(mtl_float2x2(1, 2, 3, 4)) == -2);
  CHECK(determinant(m) == -3);
  mtl_float4x4 d4 = mtl_float4x4(mtl_float4(2, 0, 0, 0), mtl_float4(0, 3, 0, 0), mtl_float4(0, 0, 4, 0), mtl_float4(1, 2, 3, 5));
  CHECK(determinant(d4) == 120);
  mtl_float4x4 g = mtl_float4x4(mtl_float4(1, 2, 3, 4), mtl_float4(5, 6, 7, 8), mtl_float4(2, 6, 4, 8), mtl_float4(3, 1, 1, 2));
  CHECK(determinant(g) == 72);
  CHECK(determinant(transpose(g)) == 72);

  mtl_float3x3 sum = m + id;
  CHECK(sum[0][0] == 2 && sum[2][2] == 11);
  CHECK((m - m)[1][1] == 0 && (-m)[0][0] == -1);
  CHECK((2.0f * m)[2][2] == 20 && (m * 2)[0][1] == 4 && (m / 2)[0][1] == 1);
  mtl_float3x3 acc = id;
  acc += id;
  acc *= 0.5f;
  acc *= m;
  CHECK(acc == m);
  acc -= m;
  CHECK(acc == mtl_float3x3(0.0f));
  m[0] = mtl_float3(9);
  m[1][1] = 7;
  m[2].template mtl_swizzle_ref<0, 1>() = mtl_float2(-1, -2);
  CHECK(m[0].y == 9 && m[1][1] == 7 && m[2][1] == -2);

  mtl_half2x2 h = mtl_half2x2(mtl_float2x2(1, 2, 3, 4));
  CHECK(float(h[1][1]) == 4 && float(determinant(h)) == -2);
  mtl_half2 hv = h * mtl_half2(mtl_half(1.0f), mtl_half(1.0f));
  CHECK(float(hv.x) == 4 && float(hv.y) == 6);
  return finish("test_matrix");
}
