// A zoo subject hunted by its inputs alone, as GRIST does (no weight steps, no crafted training), seed 1 and a budget
// by iteration count, for the zoo tests that pin the iteration a subject fires at. Needs the zoo exported
// (/usr/bin/python3 zoo/zoo_export.py; make test does it); a failure to read or hunt fails the calling test.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "config/manifest.h"
#include "search/hunt.h"

namespace grist::testing {

// zoo/<id>/manifest.toml with `adjust` applied to the manifest after the inputs-only settings.
HazardOutcome hunt_zoo_inputs_only(const std::string& id, int64_t max_iterations,
                                   const std::function<void(Manifest&)>& adjust = {});

}  // namespace grist::testing
