/* vec_undef.h -- forget the vector layer's names (vec_*.h includes it
 * first, so a file can instantiate a kernel header for f32 and then
 * f64, or for two ISAs). */
#undef VT
#undef VL
#undef MT
#undef VZERO
#undef VLOADU
#undef VSTOREU
#undef VSET1
#undef VFMA
#undef VFNMA
#undef VADD
#undef VSUB
#undef VMUL
#undef VDIV
#undef VMAX
#undef VMIN
#undef VMASK_FIRST
#undef VMASKZ_LOAD
#undef VMASK_STORE
#undef VZERO_WHERE_NEGINF
#undef VROUND
#undef VFLOOR
#undef VFRAC
#undef VLDEXP
#undef VSCALE_NORMAL
#undef VALL_LT
#undef VZIPLO
#undef VZIPHI
#undef VSTORE_ZIP
#undef VLOAD_UNZIP
#undef VSCALEF
#undef VEXP
#undef VEXP2P1
#undef VEXP2P1_NEG
