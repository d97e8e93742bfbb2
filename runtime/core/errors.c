/* errors.c -- error messages and dtype tables of the runtime.
 *
 * Pure lookups over static tables; no state.  The dtype codes and their
 * storage sizes follow language.md section 2 (rlx_dtype in rlxrt.h).
 */
#include "runtime/rlxrt.h"

static const char *const err_msgs[] = {
  [RLX_OK] = "success",
  [RLX_ERR_INDEX] = "index out of range",
  [RLX_ERR_SINGULAR] = "singular matrix",
  [RLX_ERR_NOMEM] = "out of memory",
  [RLX_ERR_INVALID] = "invalid argument",
  [RLX_ERR_IO] = "input/output error",
  [RLX_ERR_FORMAT] = "malformed file or mismatched tensor",
  [RLX_ERR_CPU] = "the CPU lacks an instruction set extension the code "
                  "was compiled for",
  [RLX_ERR_GPU] = "no usable GPU, or the GPU driver failed",
  [RLX_ERR_SIZE] = "a dynamic size is negative or over its bound",
};

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
  [RLX_DT_F32] = {"f32", 4}, [RLX_DT_F64] = {"f64", 8},
  [RLX_DT_F16] = {"f16", 2}, [RLX_DT_BF16] = {"bf16", 2},
  [RLX_DT_I8] = {"i8", 1},   [RLX_DT_U8] = {"u8", 1},
  [RLX_DT_I32] = {"i32", 4}, [RLX_DT_I64] = {"i64", 8},
  [RLX_DT_BOOL] = {"bool", 1}, [RLX_DT_C64] = {"c64", 8},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *rlx_strerror(int code)
{
  if (code < 0 || code >= COUNT(err_msgs) || !err_msgs[code])
    return "unknown error";
  return err_msgs[code];
}

const char *rlx_dtype_name(int dtype)
{
  if (dtype < 0 || dtype >= COUNT(dtypes))
    return "?";
  return dtypes[dtype].name;
}

size_t rlx_dtype_size(int dtype)
{
  if (dtype < 0 || dtype >= COUNT(dtypes))
    return 0;
  return dtypes[dtype].size;
}
