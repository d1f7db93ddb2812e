#include "config/manifest_skeleton.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <initializer_list>

#include <fmt/format.h>

#include "data/dataset.h"

namespace grist {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return text.find(w) != std::string::npos; });
}

// A TOML basic string.
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out + "\"";
}

// A TOML key: bare where it may be, quoted otherwise ("input:0", "x.1").
std::string key(const std::string& s) {
  const bool bare = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return bare ? s : toml_string(s);
}

// "text  # comment", comments aligned where the text leaves room.
std::string line(const std::string& text, const std::string& comment = "") {
  if (comment.empty()) return text + "\n";
  if (text.empty()) return "# " + comment + "\n";
  return fmt::format("{:<31} # {}\n", text, comment);
}

std::string shape_text(const Value& v) {
  if (!v.shape) return "shape not declared";
  std::string s;
  for (const Dim& d : *v.shape)
    s += (s.empty() ? "" : ", ") + (d.known() ? std::to_string(d.size) : (d.symbol.empty() ? "?" : d.symbol));
  return "[" + s + "]";
}

std::string type_text(const Value& v) {
  if (v.dtype == DType::Undefined && !v.shape) return "type and shape not declared";
  const std::string type = v.dtype == DType::Undefined ? "untyped" : std::string(dtype_name(v.dtype));
  return type + " " + shape_text(v);
}

// Elements of one sample (the dims after the batch), -1 where one is not known.
int64_t sample_numel(const Value& v) {
  if (!v.shape || v.shape->empty()) return -1;
  int64_t n = 1;
  for (size_t i = 1; i < v.shape->size(); ++i) {
    if (!(*v.shape)[i].known()) return -1;
    n *= (*v.shape)[i].size;
  }
  return n;
}

// One element in all (a rank-0 tensor, or every dimension 1).
bool single_element(const Value& v) {
  if (!v.shape) return false;
  return std::all_of(v.shape->begin(), v.shape->end(), [](const Dim& d) { return d.known() && d.size == 1; });
}

// Dimension 0 is the batch where it is symbolic, or the size every input shares: more than one, or one on an
// input of rank 2 or more (a model exported with one sample, as torchvision's examples are: [1, 3, H, W]).
bool has_batch(const Value& v, std::optional<int64_t> fixed_batch) {
  if (!v.shape || v.shape->empty()) return false;
  const Dim& d0 = v.shape->front();
  if (!d0.known()) return true;
  if (!fixed_batch || d0.size != *fixed_batch) return false;
  return *fixed_batch > 1 || v.shape->size() >= 2;
}

bool named_like_label(const std::string& name) {
  const std::string n = lower(name);
  return contains_any(n, {"label", "target", "truth", "onehot", "one_hot", "answer"}) || n == "y" || n == "y_" ||
         n.rfind("y_", 0) == 0 || n.rfind("y:", 0) == 0 || (n.size() > 2 && n.substr(n.size() - 2) == "_y");
}

bool named_like_loss(const std::string& name) {
  return contains_any(lower(name), {"loss", "cost", "entropy", "xent", "nll", "mse", "objective", "error"});
}

// Whether `id` reaches, through any ops, an index operand (Gather*'s and Scatter*'s indices, OneHot's):
// then only some integers are valid, and which the model alone does not say.
bool reaches_an_index(const Graph& g, ValueId id) {
  std::vector<bool> reached(g.values.size(), false);
  reached[static_cast<size_t>(id)] = true;
  for (const Node& n : g.nodes) {  // in topological order: one pass reaches everything downstream
    bool any = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoValue || !reached[static_cast<size_t>(n.inputs[i])]) continue;
      const bool gather_or_scatter = n.op_type.find("Gather") == 0 || n.op_type.find("Scatter") == 0;
      if ((gather_or_scatter && i == 1) || (n.op_type == "OneHot" && i == 0)) return true;
      any = true;
    }
    if (any)
      for (ValueId out : n.outputs)
        if (out != kNoValue) reached[static_cast<size_t>(out)] = true;
  }
  return false;
}

enum class Role { Data, Label, Fixed };

struct InputGuess {
  Role role = Role::Data;
  std::string why;
  std::vector<std::string> lines;  // the table's key lines after `role`
};

}  // namespace

std::string manifest_skeleton(const Graph& g, const SkeletonOptions& o) {
  namespace fs = std::filesystem;
  const std::optional<int64_t> fixed_batch = g.fixed_batch_size();
  Manifest defaults;
  default_inputs(g, defaults);  // integer inputs: labels over the classes a loss scores, as the hunt assumes

  // Roles first: the Fashion-MNIST guess needs to know whether exactly one input is data.
  std::vector<InputGuess> guesses;
  int data_inputs = 0;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    const std::string n = lower(v.name);
    InputGuess in;
    if (v.dtype == DType::Bool) {
      in.role = Role::Fixed, in.why = "a bool input is a flag the program sets";
    } else if (is_integer(v.dtype)) {
      in.role = Role::Label, in.why = "an integer input is a label";
    } else if (!has_batch(v, fixed_batch)) {
      in.role = Role::Fixed, in.why = "no batch dimension: the program feeds one fixed value";
    } else if (named_like_label(v.name)) {
      in.role = Role::Label, in.why = "its name reads as labels";
    } else if (single_element(v) || contains_any(n, {"keep_prob", "dropout", "learning_rate", "is_training"})) {
      in.role = Role::Fixed, in.why = "its name or size reads as a setting, not data";
    } else {
      in.role = Role::Data, in.why = "a float input with a batch dimension is the searched data";
    }
    data_inputs += in.role == Role::Data;
    guesses.push_back(std::move(in));
  }
  const std::string fm = o.fashion_mnist_dir;
  const bool have_fashion =
      fs::exists(fm + "/train-images-idx3-ubyte.gz") && fs::exists(fm + "/train-labels-idx1-ubyte.gz");
  bool fashion_data = false;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (guesses[i].role == Role::Data && data_inputs == 1 && have_fashion && sample_numel(g.value(g.inputs[i])) == 784)
      fashion_data = true;

  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    InputGuess& in = guesses[i];
    auto& out = in.lines;
    const int64_t per = sample_numel(v);
    if (!v.shape)
      out.push_back(line("", "its shape is not declared: grist needs its rank; give its data (values, npz:)"));
    if (in.role == Role::Data) {
      if (fashion_data) {
        out.push_back(line("source = \"fashion-mnist:train-images\"", "guess: 784 values a row read as 28×28 images"));
        out.push_back(line("scale = 0.00392156862745098", "pixels / 255 (offset, mean, std: more preprocessing)"));
      } else {
        out.push_back(line("source = \"uniform\"", "guess: no data set fits; give the program's (npz:FILE:KEY, ...)"));
        out.push_back(line("uniform = [0.0, 1.0]"));
      }
      out.push_back(line("# range = [0.0, 1.0]", "clip the search to the data's range (default: unclipped)"));
    } else if (in.role == Role::Label) {
      const bool integer = is_integer(v.dtype);
      const int64_t classes = integer ? static_cast<int64_t>(defaults.inputs.at(v.name).uniform_hi) : per;
      if (fashion_data && ((integer && per == 1 && classes == 10) || (!integer && per == 10))) {
        out.push_back(line("source = \"fashion-mnist:train-labels\"", "the images' labels, row for row"));
        if (!integer) out.push_back(line("one_hot = 10", "guess: 10 floats a row are one-hot labels"));
      } else if (integer && classes == 10 && reaches_an_index(g, g.inputs[i])) {
        out.push_back(line("source = \"uniform\"", "guess: it indexes a tensor (Gather, OneHot...): 0 is the one"));
        out.push_back(line("uniform = [0.0, 1.0]", "index sure to fit; give the program's (npz:FILE:KEY, ...)"));
      } else if (integer) {
        out.push_back(line("source = \"uniform\"", "give the program's labels (npz:FILE:KEY, values, ...)"));
        out.push_back(line(fmt::format("uniform = [0.0, {}.0]", classes),
                           classes == 10 ? "class indices 0–9 (no loss says how many classes)"
                               : fmt::format("class indices 0–{}: the classes its loss scores", classes - 1)));
      } else {
        out.push_back(line("source = \"uniform\"", "give the program's labels (npz:FILE:KEY with one_hot = C, ...)"));
        out.push_back(line("uniform = [0.0, 1.0]"));
      }
    } else {
      const std::string n = lower(v.name);
      if (v.dtype == DType::Bool) {
        out.push_back(line("values = [0.0]", "guess: false; set what the program feeds"));
      } else if (contains_any(n, {"keep"}) && single_element(v)) {
        out.push_back(line("values = [1.0]", "guess: a keep probability, 1.0 (no dropout) as in evaluation"));
      } else {
        out.push_back(line("source = \"uniform\"", "drawn once in [0, 1); give the program's value (values = [...])"));
        out.push_back(line("uniform = [0.0, 1.0]"));
      }
    }
  }

  // The loss: a one-element float output named like one, or the only one-element output.
  std::string loss, loss_why;
  std::vector<ValueId> scalars;
  for (ValueId id : g.outputs) {
    const Value& v = g.value(id);
    if (!is_float(v.dtype) && v.dtype != DType::Undefined) continue;
    if (single_element(v) || (!v.shape && named_like_loss(v.name))) scalars.push_back(id);
  }
  for (ValueId id : scalars)
    if (loss.empty() && named_like_loss(g.value(id).name)) loss = g.value(id).name, loss_why = "named like a loss";
  if (loss.empty() && scalars.size() == 1) loss = g.value(scalars[0]).name, loss_why = "the only one-element output";

  std::string text;
  text += fmt::format("# Manifest skeleton written by `grist init` for {} (docs/MANIFEST.md says what every key\n"
                      "# means). Lines marked \"guess\" are what grist read from the model's names, types and shapes:\n"
                      "# check each against the program that trains it before trusting a hunt.\n",
                      o.model_label);
  text += line("model = " + toml_string(o.model_path));
  if (!loss.empty()) {
    text += line("loss = " + toml_string(loss), "guess: " + loss_why + "; the output the training step minimises");
  } else {
    std::string names;
    for (ValueId id : g.outputs) names += (names.empty() ? "" : ", ") + g.value(id).name;
    text += line("# loss = \"...\"", "no output reads as a loss (outputs: " + names + "); name it to train");
  }
  text += "\n# Outputs:\n";
  for (ValueId id : g.outputs) text += line("", fmt::format("  {}  {}", g.value(id).name, type_text(g.value(id))));

  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    const InputGuess& in = guesses[i];
    text += "\n" + line("[inputs." + key(v.name) + "]", type_text(v));
    const char* role = in.role == Role::Data ? "data" : in.role == Role::Label ? "label" : "fixed";
    text += line(fmt::format("role = \"{}\"", role), "guess: " + in.why);
    for (const std::string& l : in.lines) text += l;
  }

  text += "\n[batch]\n";
  bool any_batch = false;
  for (ValueId id : g.inputs) any_batch |= has_batch(g.value(id), fixed_batch);
  if (fixed_batch && any_batch) {
    text += line(fmt::format("size = {}", *fixed_batch), "the model fixes its batch dimension");
  } else if (any_batch) {
    // 100 rows (GRIST's usual N), fewer where a sample is large: a 572×572 image at 100 rows is out of memory.
    int64_t largest = 1;
    for (ValueId id : g.inputs) largest = std::max(largest, sample_numel(g.value(id)));
    const int64_t rows = std::clamp<int64_t>((int64_t{1} << 18) / largest, 1, 100);
    text += line(fmt::format("size = {}", rows),
                 rows == 100 ? "guess: the batch dimension is symbolic; set the program's batch size"
                             : "guess: symbolic; few rows for samples this large; set the program's batch size");
  }
  text += line("shuffle = true", "reshuffle each epoch (TensorFlow's next_batch); false: in order");

  int64_t weights = 0, weight_values = 0;
  std::string listed;
  for (ValueId id : g.initializers) {
    const Value& v = g.value(id);
    if (!is_float(v.dtype) || !v.initial || v.initial->numel() <= 1) continue;
    ++weights;
    weight_values += v.initial->numel();
    if (weights <= 24)
      listed += line("", fmt::format("  {}  {} {}", v.name, dtype_name(v.initial->dtype()), v.initial->shape().str()));
  }
  if (weights > 24) listed += line("", fmt::format("  ... and {} more", weights - 24));
  text += "\n";
  if (loss.empty()) {
    text += line("", "[train]: name the loss output first; then the optimizer the program trains with");
  } else {
    text += line("", "How the program trains (uncomment and set as it does; without it the model does not train):");
    text += line("# [train]");
    text += line("# optimizer = \"adam\"", "sgd | adam | adagrad | rmsprop");
    text += line("# framework = \"pytorch\"", "or tensorflow: whose update rules and defaults");
    text += line("# lr = 0.001");
    text += line("# params = \"all\"", fmt::format("the {} float weights below, or a list of names", weights));
  }
  text += line("", fmt::format("Weights (float initializers of more than one element): {}, {} values", weights,
                               weight_values));
  text += listed;
  text += "\n[search]\n";
  text += line("# time_limit = 1.0", "minutes per run (experiments.conf's keys; docs/MANIFEST.md)");
  text += line("# max_iterations = 1000");
  return text;
}

}  // namespace grist
