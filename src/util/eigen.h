// Eigen's core, included once for everyone: GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized inside
// Eigen's products (GCC bug 105593, fixed in GCC 13), so the warning is silenced for Eigen's headers only.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
