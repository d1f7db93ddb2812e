#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {

void register_random_ops(OpRegistry& r) { (void)r; }

}  // namespace grist
