/* vec.h -- the runtime's vector layer: one vocabulary over a vector of
 * VL elements of type T, implemented per ISA, so that a family's
 * micro-kernels (conv_kern.h, attention_kern.h, ...) are written once
 * and compiled for each target.
 *
 * A kernel file defines VEC_F64 (0: T = float, 1: T = double) and
 * includes one of vec_avx512.h, vec_avx2.h, vec_neon.h, vec_scalar.h;
 * each first #undefs the previous instantiation (vec_undef.h), so one
 * file can instantiate f32 then f64.  Every ISA header defines:
 *
 *   TGT                 function attributes enabling the ISA
 *   VT, VL              the vector type and its lane count
 *   MT                  a "first n lanes" selector: a mask register or
 *                       a count, whatever the ISA loads with
 *   VZERO() VSET1(x)    all lanes 0 / x
 *   VLOADU(p) VSTOREU(p, v)         unaligned full-vector load / store
 *   VMASK_FIRST(n)      MT selecting lanes 0 .. n-1 (1 <= n <= VL)
 *   VMASKZ_LOAD(m, p)   lanes of m from p, 0 elsewhere; reads nothing
 *                       outside m
 *   VMASK_STORE(p, m, v)            lanes of m to p; writes nothing else
 *   VFMA(a, b, c)       a*b + c, one rounding (a fused multiply-add)
 *   VFNMA(a, b, c)      c - a*b, one rounding
 *   VADD VSUB VMUL VDIV VMAX VMIN   lane-wise, IEEE (VMAX / VMIN: as
 *                       x86 maxps / minps: the second operand when
 *                       either is NaN or both are zero)
 *   VZERO_WHERE_NEGINF(c, x)        0 in the lanes where c is -inf, x
 *                       elsewhere
 *   VROUND(x) VFLOOR(x) to the nearest integer (ties to even) / down
 *   VFRAC(x)            (f32) x - floor(x) rounded down, in [0, 1)
 *                       for finite x (exact but for x in (-1/2, 0)).
 *                       AVX-512: vreduceps (AVX512DQ, which a kernel
 *                       using it adds to its target and checks the CPU
 *                       for), 0 for +-inf.  Elsewhere NaN for +-inf;
 *                       rounded to nearest, then one ulp down where
 *                       f + floor(x) (exact) exceeds x
 *   VLDEXP(p, n)        (f32) p * 2^n rounded once (denormal results
 *                       included), for integral n in [-160, 129] and
 *                       |p| in [0.5, 4].  AVX-512: vscalefps (any n);
 *                       scalar: ldexpf; AVX2, NEON: p * 2^h exactly
 *                       (h = floor(n / 2) added to p's exponent), times
 *                       2^(n - h)
 *   VZIPLO(a, b, g) VZIPHI(a, b, g)  blocks of g lanes taken in turn from
 *                       a and b (g = 1, 2, 4 .. VL/2, a constant):
 *                       ZIPLO from their lower halves (a's first block,
 *                       b's first, a's second ...), ZIPHI from their
 *                       upper halves; g = 1 interleaves (re, im) pairs
 *   VSTORE_ZIP(p, a, b, g)          VZIPLO(a, b, g) to p, VZIPHI to
 *                       p + VL (cheaper than the two: one step fewer on
 *                       AVX2, vst2 on NEON)
 *   VLOAD_UNZIP(p, a, b)            a = the even, b = the odd lanes of
 *                       the 2 VL elements at p (undoes a g = 1 zip: re
 *                       and im of VL interleaved complex numbers)
 *
 * AVX-512 f32 also has VSCALEF(p, n) = p * 2^floor(n) (vscalefps) for
 * any p and n.  AVX2 f32 also has VSCALE_NORMAL(p, n) (VLDEXP where
 * the result is normal: p's exponent plus n, for integral |n| < 2^22, no
 * rounding) and VALL_LT(a, b) (nonzero when a < b in every lane, 0 if
 * any lane is NaN).  vec_exp.h adds VEXP and VEXP2P1 (f32) on top, and
 * VEXP2P1_NEG where the layer has VSCALE_NORMAL.
 *
 * Lane-wise operations are correctly rounded IEEE operations on every
 * ISA, so a kernel that applies the same operations to each element
 * gives the same bits on every ISA.  Reductions across lanes are not in
 * the layer: their order is part of each family's algorithm.
 */
