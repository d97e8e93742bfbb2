/* conv.c -- 2-D convolution, NCHW, forward and both backward
 * convolutions for f32 and f64 (rlxrt.h, rlx_conv2d_*).
 *
 * Reference direct loops: every output element is one serial sum in a
 * fixed order, so results do not depend on the thread count.
 */
#include "runtime/rlxrt.h"

#define T float
#define FN(name) name##f32
#include "runtime/conv_tmpl.h"
#undef T
#undef FN

#define T double
#define FN(name) name##f64
#include "runtime/conv_tmpl.h"
#undef T
#undef FN
