// Runs one case of the ONNX project's per-operator tests (Debian's libonnx-testdata: a model.onnx and
// test_data_set_*/{input,output}_N.pb) in grist and says what happened, so the conformance suite and the
// op tests that lean on the same reference data count and classify cases the same way.
#pragma once

#include <filesystem>
#include <string>

namespace grist::testing {

// The folder of the node tests, e.g. /usr/share/libonnx-testdata/data/node.
std::filesystem::path onnx_node_test_dir();

struct ReferenceCase {
  enum class Outcome {
    Refused,      // the importer refused the model (e.g. an element type grist does not have)
    Unsupported,  // it imported, but some op is not in grist's registry
    Failed,       // it ran and failed: an error, or an output off the reference
    Passed,       // every output of every data set within ONNX's tolerances (rtol 1e-3, atol 1e-7)
  };
  Outcome outcome = Outcome::Refused;
  std::string message;  // why it was refused or failed; the unsupported op types
  int data_sets = 0;    // data sets run
  int outputs = 0;      // outputs compared
};

// Imports dir/model.onnx and runs every data set, comparing outputs with ONNX's backend-test tolerances.
ReferenceCase run_reference_case(const std::filesystem::path& dir);

}  // namespace grist::testing
