// target_features.cpp: the one C++ file of rlxc. LLVM's C API gives
// back only the feature string it was handed, not what a CPU name
// implies (--mcpu=x86-64-v3 enables avx2 and fma with an empty string),
// so this asks the target machine's subtarget which features are on.
#include <cstring>

#include <llvm-c/TargetMachine.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>

extern "C" bool cg_tm_has_feature(LLVMTargetMachineRef tm, const char *name) {
  const llvm::MCSubtargetInfo *sti =
      reinterpret_cast<llvm::TargetMachine *>(tm)->getMCSubtargetInfo();
  for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (!std::strcmp(kv.Key, name)) return sti->getFeatureBits()[kv.Value];
  return false;
}
