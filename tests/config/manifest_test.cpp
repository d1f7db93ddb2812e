// Manifests (docs/MANIFEST.md): every key read into its field, paths resolved beside the manifest, the
// experiments.conf base under the manifest's [search], and every malformed value refused with one line
// naming the file and the key.
#include "config/manifest.h"

#include <gtest/gtest.h>

#include "data/test_files.h"

namespace grist {
namespace {

using testing::ScratchDir;

Result<Manifest> read(const ScratchDir& dir, const std::string& toml, const SearchConfig& base = {}) {
  return read_manifest(dir.write("m.toml", toml), base);
}

TEST(Manifest, EveryKeyIsReadIntoItsField) {
  ScratchDir dir;
  auto m = read(dir, R"(
model = "net.onnx"
loss = "cost"

[inputs.x]
role = "data"
source = "fashion-mnist:train-images"
rows = [5000, 60000]
scale = 0.5
offset = -1.0
mean = [0.5, 0.25, 0.125]
std = 2.0
channel_axis = -1
range = [-1.0, 2.0]
dtype = "float64"

[inputs.y]
role = "label"
source = "fashion-mnist:test-labels"
one_hot = 10

[inputs.z]
role = "fixed"
source = "npz:data/arrays.npz:zeta"
redraw = true

[inputs.u]
role = "data"
uniform = [-3.0, 4.0]
range = "first-batch"

[inputs.n]
source = "normal"
normal = [1.5, 0.25]

[inputs.v]
role = "data"
values = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
range = "none"

[inputs.w]
source = "npy:/abs/w.npy"

[batch]
size = 32
shuffle = false

[train]
optimizer = "rmsprop"
framework = "tensorflow"
lr = 0.5
momentum = 0.25
epsilon = 1e-6
decay = 0.75
centered = true
initial_accumulator = 0.125
weight_decay = 0.01
params = ["fc.weight", "fc.bias"]
batch = "monitored"
dropout = false
checkpoint = "ckpt/step3.npz"

[monitor]
dropout = true

[numerics]
ftz = true

[search]
time_limit = 2.5
change = 0.3
decay = true
decay_steps = 50
decay_rate = 0.25
switch_data = false
drop_rate = 0.1
variant = "grist-ns"
switch_score = "fifo"
step = "line"
switch_every = 7
max_iterations = 1234
seed = 99
target = "/Log_1"
weight_change = 0.02
weights_after = 0.5
weights_after_s = 3
craft_early = true

[scan]
trained_weights = [-4.0, 4.0]

[expect]
op = "Log"
node = "/Log_1"
study_iterations = 346
study_seconds = 0.14
note = "a note"
counter_offset = 1
counter_step = 2
)");
  ASSERT_TRUE(m) << m.message();
  EXPECT_EQ(m->path, dir.path("m.toml"));
  EXPECT_EQ(m->model, dir.path("net.onnx"));  // relative to the manifest's folder
  EXPECT_EQ(m->loss, "cost");
  ASSERT_EQ(m->inputs.size(), 7u);

  const InputSpec& x = m->inputs.at("x");
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.role, InputRole::Data);
  EXPECT_EQ(x.source, InputSource::FashionMnist);
  EXPECT_EQ(x.file, "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(x.row_begin, 5000);
  EXPECT_EQ(x.row_end, 60000);
  EXPECT_EQ(x.scale, 0.5);
  EXPECT_EQ(x.offset, -1.0);
  EXPECT_EQ(x.mean, (std::vector<double>{0.5, 0.25, 0.125}));
  EXPECT_EQ(x.std, (std::vector<double>{2.0}));  // a scalar: every channel alike
  EXPECT_EQ(x.channel_axis, -1);
  EXPECT_EQ(x.preprocess(4, 1), ((4 * 0.5 - 1) - 0.25) / 2);
  EXPECT_EQ(x.range, ClipRange::Explicit);
  EXPECT_EQ(x.lo, -1.0);
  EXPECT_EQ(x.hi, 2.0);
  EXPECT_EQ(x.dtype, DType::Float64);
  const InputSpec& y = m->inputs.at("y");
  EXPECT_EQ(y.role, InputRole::Label);
  EXPECT_EQ(y.file, "/usr/share/datasets/fashion-mnist/test-labels-idx1-ubyte.gz");
  EXPECT_EQ(y.one_hot, 10);
  EXPECT_EQ(y.row_end, -1);  // every row
  EXPECT_EQ(y.offset, 0.0);
  EXPECT_TRUE(y.mean.empty());
  EXPECT_EQ(y.channel_axis, 1);
  EXPECT_EQ(y.range, ClipRange::None);
  const InputSpec& z = m->inputs.at("z");
  EXPECT_EQ(z.role, InputRole::Fixed);
  EXPECT_EQ(z.source, InputSource::Npz);
  EXPECT_EQ(z.file, dir.path("data/arrays.npz"));
  EXPECT_EQ(z.key, "zeta");
  EXPECT_TRUE(z.redraw);
  const InputSpec& u = m->inputs.at("u");
  EXPECT_EQ(u.source, InputSource::Uniform);
  EXPECT_TRUE(u.sampled());
  EXPECT_EQ(u.uniform_lo, -3.0);
  EXPECT_EQ(u.uniform_hi, 4.0);
  EXPECT_EQ(u.range, ClipRange::FirstBatch);
  const InputSpec& n = m->inputs.at("n");
  EXPECT_EQ(n.role, InputRole::Fixed);  // the default role
  EXPECT_EQ(n.source, InputSource::Normal);
  EXPECT_EQ(n.normal_mean, 1.5);
  EXPECT_EQ(n.normal_std, 0.25);
  const InputSpec& v = m->inputs.at("v");
  EXPECT_EQ(v.source, InputSource::Values);  // implied by `values`
  EXPECT_EQ(v.values.dtype(), DType::Float64);
  EXPECT_EQ(v.values.shape(), (Shape{3, 2}));
  EXPECT_EQ(v.values.get_as_double(5), 6.0);
  EXPECT_EQ(m->inputs.at("w").file, "/abs/w.npy");  // absolute paths stay

  EXPECT_EQ(m->batch_size, 32);
  EXPECT_FALSE(m->shuffle);
  const TrainSpec& t = m->train;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.optimizer.kind, OptimizerKind::RMSProp);
  EXPECT_EQ(t.optimizer.flavor, Framework::TensorFlow);
  EXPECT_EQ(t.optimizer.lr, 0.5);
  EXPECT_EQ(t.optimizer.momentum, 0.25);
  EXPECT_EQ(t.optimizer.epsilon, 1e-6);
  EXPECT_EQ(t.optimizer.decay, 0.75);
  EXPECT_TRUE(t.optimizer.centered);
  EXPECT_EQ(t.optimizer.initial_accumulator, 0.125);
  EXPECT_EQ(t.optimizer.weight_decay, 0.01);
  EXPECT_FALSE(t.all_params);
  EXPECT_EQ(t.params, (std::vector<std::string>{"fc.weight", "fc.bias"}));
  EXPECT_FALSE(t.on_updated_batch);
  EXPECT_FALSE(t.dropout);
  EXPECT_EQ(t.checkpoint, dir.path("ckpt/step3.npz"));  // beside the manifest
  EXPECT_TRUE(m->monitor_dropout);
  EXPECT_TRUE(m->ftz);

  const SearchConfig& s = m->search;
  EXPECT_EQ(s.time_limit, 2.5);
  EXPECT_EQ(s.change, 0.3);
  EXPECT_TRUE(s.decay);
  EXPECT_EQ(s.decay_steps, 50);
  EXPECT_EQ(s.decay_rate, 0.25);
  EXPECT_FALSE(s.switch_data);
  EXPECT_EQ(s.drop_rate, 0.1);
  EXPECT_EQ(s.variant, Variant::GristNs);
  EXPECT_EQ(s.switch_score, SwitchScore::Fifo);
  EXPECT_EQ(s.step, StepRule::Line);
  EXPECT_EQ(s.switch_every, 7);
  EXPECT_EQ(s.max_iterations, 1234);
  EXPECT_EQ(s.seed, 99u);
  EXPECT_EQ(m->target, "/Log_1");
  EXPECT_EQ(s.weight_change, 0.02);
  EXPECT_EQ(s.weights_after, 0.5);
  EXPECT_EQ(s.weights_after_s, 3.0);
  EXPECT_TRUE(s.craft_early);
  EXPECT_FALSE(s.stall_rule);
  ASSERT_TRUE(m->scan_trained_weights.has_value());
  EXPECT_EQ(*m->scan_trained_weights, (std::pair<double, double>{-4.0, 4.0}));

  const Expectation& e = m->expect;
  EXPECT_EQ(e.op, "Log");
  EXPECT_EQ(e.node, "/Log_1");
  EXPECT_EQ(e.study_iterations, 346);
  EXPECT_EQ(e.study_seconds, 0.14);
  EXPECT_EQ(e.note, "a note");
  EXPECT_EQ(e.counter_offset, 1);
  EXPECT_EQ(e.counter_step, 2);
  EXPECT_EQ(e.study_count(10), 21);  // offset + step × iteration
}

TEST(Manifest, DefaultsWhenOnlyTheModelIsGiven) {
  ScratchDir dir;
  SearchConfig base;
  base.change = 0.7;  // from an experiments.conf
  auto m = read(dir, "model = \"/abs/net.onnx\"\n", base);
  ASSERT_TRUE(m) << m.message();
  EXPECT_EQ(m->model, "/abs/net.onnx");
  EXPECT_TRUE(m->loss.empty());
  EXPECT_TRUE(m->inputs.empty());
  EXPECT_EQ(m->batch_size, 0);
  EXPECT_TRUE(m->shuffle);
  EXPECT_FALSE(m->train.enabled);
  EXPECT_FALSE(m->monitor_dropout);
  EXPECT_FALSE(m->ftz);
  EXPECT_EQ(m->search.change, 0.7);  // the base stays where the manifest says nothing
  EXPECT_EQ(m->search.time_limit, 30.0);
  EXPECT_EQ(m->search.variant, Variant::Grist);
  EXPECT_FALSE(m->scan_trained_weights.has_value());
  EXPECT_FALSE(m->expect.study_iterations.has_value());
  EXPECT_EQ(m->expect.study_count(5), 5);
}

TEST(Manifest, OptimizerDefaultsFollowTheFramework) {
  ScratchDir dir;
  auto tf = read(dir, "model = \"m.onnx\"\nloss = \"l\"\n[train]\noptimizer = \"adam\"\nframework = \"tensorflow\"\n");
  auto pt = read(dir, "model = \"m.onnx\"\nloss = \"l\"\n[train]\noptimizer = \"Adam\"\n");
  ASSERT_TRUE(tf && pt) << tf.message() << pt.message();
  const OptimizerConfig want_tf = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::TensorFlow);
  const OptimizerConfig want_pt = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::PyTorch);
  EXPECT_EQ(tf->train.optimizer.epsilon, want_tf.epsilon);
  EXPECT_EQ(tf->train.optimizer.lr, want_tf.lr);
  EXPECT_EQ(pt->train.optimizer.epsilon, want_pt.epsilon);
  EXPECT_EQ(pt->train.optimizer.flavor, Framework::PyTorch);
  EXPECT_TRUE(pt->train.all_params);
  EXPECT_TRUE(pt->train.on_updated_batch);
  auto none = read(dir, "model = \"m.onnx\"\n[train]\noptimizer = \"none\"\n");
  ASSERT_TRUE(none) << none.message();
  EXPECT_FALSE(none->train.enabled);
  auto all = read(dir, "model = \"m.onnx\"\nloss = \"l\"\n[train]\noptimizer = \"sgd\"\nparams = \"all\"\n");
  ASSERT_TRUE(all) << all.message();
  EXPECT_TRUE(all->train.all_params);
}

// Every malformed manifest: the message starts with the file (and line for TOML syntax), names the key,
// says what is wrong, and is one line.
TEST(Manifest, EveryMalformedValueIsRefusedNamingFileAndKey) {
  struct Case {
    std::string toml, expected;
  };
  const std::string model = "model = \"m.onnx\"\n";
  const Case cases[] = {
      {"model = \n", ":1:"},  // TOML syntax: line and column
      {"model = \"m.onnx\"\nloss = fals\n", ":2:12: not valid TOML: Error while parsing boolean: expected 'false', saw "
                                            "'fals\\n'"},  // the parser quotes the newline it saw: escaped
      {"model = \"m.onnx\"\n\"a\\nb\" = 1\n", "key 'a\\nb': unknown key"},
      {"model = \"m.onnx\"\nmodle = 1\n", "key 'modle': unknown key (expected one of: batch, expect, inputs"},
      {"loss = \"l\"\n", "key 'model': is required"},
      {"model = 3\n", "key 'model': must be a string"},
      {model + "loss = 1\n", "key 'loss': must be a string"},
      {model + "inputs = 3\n", "key 'inputs': must be a table of [inputs.NAME] tables"},
      {model + "[inputs]\nx = 1\n", "key 'inputs.x': must be a table"},
      {model + "[inputs.x]\nrol = \"data\"\n", "key 'inputs.x.rol': unknown key"},
      {model + "[inputs.x]\nrole = \"weights\"\n", "key 'inputs.x.role': 'weights' is not data, label or fixed"},
      {model + "[inputs.x]\nrole = 1\n", "key 'inputs.x.role': must be a string"},
      {model + "[inputs.x]\nsource = \"values\"\n", "key 'inputs.x.values': source = \"values\" needs a non-empty"},
      {model + "[inputs.x]\nvalues = []\n", "key 'inputs.x.values': source = \"values\" needs a non-empty"},
      {model + "[inputs.x]\nvalues = [[1.0, 2.0], [3.0]]\n", "key 'inputs.x.values': rows of different lengths"},
      {model + "[inputs.x]\nvalues = [[1.0, 2.0], 3.0]\n", "key 'inputs.x.values': rows of different"},
      {model + "[inputs.x]\nvalues = [[1.0, \"a\"]]\n", "key 'inputs.x.values': holds something that is not a number"},
      {model + "[inputs.x]\nsource = \"fashion-mnist:validation\"\n",
       "key 'inputs.x.source': unknown part 'validation' of fashion-mnist"},
      {model + "[inputs.x]\nsource = \"npz:file.npz\"\n", "key 'inputs.x.source': expected npz:FILE:KEY"},
      {model + "[inputs.x]\nsource = \"csv:file.csv\"\n", "key 'inputs.x.source': unknown source 'csv:file.csv'"},
      {model + "[inputs.x]\nuniform = [2.0, 1.0]\n", "key 'inputs.x.uniform': needs LO < HI"},
      {model + "[inputs.x]\nuniform = [1.0]\n", "key 'inputs.x.uniform': must be a pair [LO, HI]"},
      {model + "[inputs.x]\nsource = \"normal\"\nnormal = [0.0, -1.0]\n", "key 'inputs.x.normal': needs STD > 0"},
      {model + "[inputs.x]\nsource = \"normal\"\nnormal = [0.0, \"s\"]\n",
       "key 'inputs.x.normal': must hold two numbers"},
      {model + "[inputs.x]\nscale = \"big\"\n", "key 'inputs.x.scale': must be a number"},
      {model + "[inputs.x]\nsource = \"npy:a.npy\"\nrows = [5, 5]\n", "key 'inputs.x.rows': needs 0 <= BEGIN < END"},
      {model + "[inputs.x]\nsource = \"npy:a.npy\"\nrows = [-1, 5]\n", "key 'inputs.x.rows': needs 0 <= BEGIN < END"},
      {model + "[inputs.x]\nsource = \"npy:a.npy\"\nrows = [0.5, 5]\n", "key 'inputs.x.rows': must be a pair of row"},
      {model + "[inputs.x]\nsource = \"npy:a.npy\"\nrows = 5\n", "key 'inputs.x.rows': must be a pair of row"},
      {model + "[inputs.x]\nrows = [0, 5]\n", "key 'inputs.x.rows': needs rows to choose from"},
      {model + "[inputs.x]\noffset = \"one\"\n", "key 'inputs.x.offset': must be a number"},
      {model + "[inputs.x]\noffset = nan\n", "key 'inputs.x.offset': must be finite"},
      {model + "[inputs.x]\nscale = inf\n", "key 'inputs.x.scale': must be finite"},
      {model + "[inputs.x]\nmean = []\n", "key 'inputs.x.mean': must be a number or a non-empty list"},
      {model + "[inputs.x]\nmean = [0.5, \"a\"]\n", "key 'inputs.x.mean': must be a number or a non-empty list"},
      {model + "[inputs.x]\nmean = inf\n", "key 'inputs.x.mean': must be finite"},
      {model + "[inputs.x]\nstd = 0.0\n", "key 'inputs.x.std': 0 is not a positive, finite std"},
      {model + "[inputs.x]\nstd = [1.0, -2.0]\n", "key 'inputs.x.std': -2 is not a positive, finite std"},
      {model + "[inputs.x]\nmean = [1.0, 2.0]\nstd = [1.0, 2.0, 3.0]\n",
       "key 'inputs.x.std': has 3 channels but mean has 2"},
      {model + "[inputs.x]\nmean = 0.5\nchannel_axis = 1\n",
       "key 'inputs.x.channel_axis': needs a per-channel mean or std (a list)"},
      {model + "[inputs.x]\nmean = [0.5, 0.5]\nchannel_axis = 1.0\n",
       "key 'inputs.x.channel_axis': must be an integer"},
      {model + "[inputs.x]\none_hot = 2.5\n", "key 'inputs.x.one_hot': must be a positive integer"},
      {model + "[inputs.x]\none_hot = -1\n", "key 'inputs.x.one_hot': must be a positive integer"},
      {model + "[inputs.x]\ndtype = \"float16\"\n", "key 'inputs.x.dtype': unknown dtype 'float16'"},
      {model + "[inputs.x]\nredraw = 1\n", "key 'inputs.x.redraw': must be true or false"},
      {model + "[inputs.x]\nrole = \"data\"\nrange = \"all\"\n", "key 'inputs.x.range': 'all' is not [LO, HI]"},
      {model + "[inputs.x]\nrole = \"data\"\nrange = [1.0, 0.0]\n", "key 'inputs.x.range': needs LO <= HI"},
      {model + "[inputs.x]\nrole = \"label\"\nrange = [0.0, 1.0]\n",
       "key 'inputs.x.range': only a data input is clipped"},
      {model + "[batch]\nsize = 0\n", "key 'batch.size': must be a positive integer"},
      {model + "[batch]\nsize = 2.5\n", "key 'batch.size': must be a positive integer"},
      {model + "[batch]\nshuffle = \"no\"\n", "key 'batch.shuffle': must be true or false"},
      {model + "[batch]\nsizes = 2\n", "key 'batch.sizes': unknown key"},
      {model + "[train]\noptimizer = \"sgd\"\n", "key 'train.optimizer': training needs a `loss` output"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"lbfgs\"\n", "key 'train.optimizer': unknown optimizer 'lbfgs'"},
      {model + "loss = \"l\"\n[train]\nframework = \"jax\"\n", "key 'train.framework': must be pytorch or tensorflow"},
      {model + "loss = \"l\"\n[train]\nlr = -0.1\n", "key 'train.lr': must not be negative"},
      {model + "loss = \"l\"\n[train]\nbeta1 = \"x\"\n", "key 'train.beta1': must be a number"},
      {model + "loss = \"l\"\n[train]\nnesterov = 1\n", "key 'train.nesterov': must be true or false"},
      {model + "loss = \"l\"\n[train]\nparams = 3\n", "key 'train.params': must be \"all\" or a list"},
      {model + "loss = \"l\"\n[train]\nparams = [\"w\", 3]\n", "key 'train.params': must be \"all\" or a list"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"sgd\"\nbatch = \"random\"\n",
       "key 'train.batch': must be updated, monitored or fresh"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"sgd\"\nbatch = \"monitored\"\nmasks = \"new\"\n",
       "key 'train.masks': must be fresh or reuse"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"sgd\"\npretrain_steps = -1\n",
       "key 'train.pretrain_steps': must be a non-negative integer"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"sgd\"\npretrain_steps = 1.5\n",
       "key 'train.pretrain_steps': must be a non-negative integer"},
      {model + "[search]\nvariables = \"gain\"\n", "key 'search.variables': must be a list of initializer names"},
      {model + "[search]\nvariables = [1]\n", "key 'search.variables': must be a list of initializer names"},
      {model + "[search]\ntarget = \"/Log\"\nobjective = \"biggest\"\n",
       "key 'search.objective': 'biggest' is not min-abs, min-abs-one-minus, neg-max, max, min or neg-spread"},
      {model + "loss = \"l\"\n[train]\ndropout = \"yes\"\n", "key 'train.dropout': must be true or false"},
      {model + "loss = \"l\"\n[train]\nmomentun = 0.9\n", "key 'train.momentun': unknown key"},
      {model + "[monitor]\ndropout = 1\n", "key 'monitor.dropout': must be true or false"},
      {model + "[monitor]\nmask = true\n", "key 'monitor.mask': unknown key"},
      {model + "[numerics]\nftz = \"on\"\n", "key 'numerics.ftz': must be true or false"},
      {model + "[search]\nchange = -1.0\n", "m.toml:3: key 'change': -1 is outside [0, 1e+30]"},  // its own line
      {model + "[search]\nchange = \"x\"\n", "key 'change': 'x' is not a number"},
      {model + "[search]\ntime_limit = 0\n", "key 'time_limit': must be positive (minutes)"},
      {model + "[search]\ndecay = \"maybe\"\n", "key 'decay': 'maybe' is not a boolean"},
      {model + "[search]\ndrop_rate = 2.0\n", "key 'drop_rate': 2 is outside [0, 1]"},
      {model + "[search]\ndelta_type = \"ranum\"\n", "key 'delta_type': only 'grist'"},
      {model + "[search]\nswitch_data = true\nchnage = 0.2\n", "m.toml:4: key 'chnage': unknown key"},
      {model + "[search]\nchange = [0.1]\n", "key 'search.change': must be a number, a boolean or a string"},
      {model + "[search]\nvariant = \"best\"\n", "key 'search.variant': unknown variant 'best'"},
      {model + "[search]\nswitch_score = \"lifo\"\n", "key 'search.switch_score': unknown switch score 'lifo'"},
      {model + "[search]\nstep = \"newton\"\n",
       "key 'search.step': unknown step 'newton' (expected sign, adam or line)"},
      {model + "[search]\nswitch_every = 0\n", "key 'search.switch_every': must be positive"},
      {model + "[search]\nmax_iterations = -5\n", "key 'search.max_iterations': must be a non-negative integer"},
      {model + "[search]\nmax_iterations = 1.5\n", "key 'search.max_iterations': must be a non-negative integer"},
      {model + "[search]\nseed = -1\n", "key 'search.seed': must be a non-negative integer"},
      {model + "[search]\nweight_change = -0.01\n", "key 'search.weight_change': must not be negative"},
      {model + "[search]\nweights_after = 1.5\n", "key 'search.weights_after': must be a fraction of the budget"},
      {model + "[search]\nweights_after_s = -1\n", "key 'search.weights_after_s': must be a number of seconds"},
      {model + "[search]\ntarget = 4\n", "key 'search.target': must be a string"},
      {model + "[search]\ncraft_early = 1\n", "key 'search.craft_early': must be true or false"},
      {model + "[search]\nstall_rule = \"yes\"\n", "key 'search.stall_rule': must be true or false"},
      {model + "[scan]\ntrained_weights = [1.0, -1.0]\n", "key 'scan.trained_weights': needs LO <= HI"},
      {model + "[scan]\ntrained_weights = 1.0\n", "key 'scan.trained_weights': must be a pair [LO, HI]"},
      {model + "[scan]\nweights = [0.0, 1.0]\n", "key 'scan.weights': unknown key"},
      {model + "[expect]\nop = 3\n", "key 'expect.op': must be a string"},
      {model + "[expect]\ncounter_offset = 0.5\n", "key 'expect.counter_offset': must be an integer"},
      {model + "[expect]\nstudy_iterations = \"many\"\n", "key 'expect.study_iterations': must be a number"},
      {model + "[expect]\nstudy_seconds = \"fast\"\n", "key 'expect.study_seconds': must be a number"},
      {model + "[expect]\nfigure = 1\n", "key 'expect.figure': unknown key"},
  };
  int refused = 0;
  for (const Case& c : cases) {
    ScratchDir dir;
    auto m = read(dir, c.toml);
    if (m) {
      ADD_FAILURE() << "accepted:\n" << c.toml;
      continue;
    }
    const std::string& msg = m.message();
    EXPECT_EQ(msg.rfind(dir.path("m.toml"), 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "got:  " << msg << "\nwant: " << c.expected << "\nfor:\n"
                                                       << c.toml;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    ++refused;
  }
  EXPECT_EQ(refused, static_cast<int>(std::size(cases)));
}

// Keys that would be read and then ignored are refused, naming the key: a manifest does what it says.
TEST(Manifest, AcceptedButIgnoredCombinationsAreRefused) {
  const std::string model = "model = \"m.onnx\"\n";
  const std::string train = model + "loss = \"l\"\n[train]\n";
  const std::string phase = "[[train.phases]]\nloss = \"d\"\noptimizer = \"sgd\"\nparams = [\"w\"]\n";
  const std::pair<std::string, std::string> cases[] = {
      {model + "[inputs.x]\nsource = \"npy:a.npy\"\nuniform = [0.0, 2.0]\n",
       "key 'inputs.x.uniform': is only read with source = \"uniform\" (this input's source is 'npy:a.npy')"},
      {model + "[inputs.x]\nsource = \"uniform\"\nnormal = [0.0, 2.0]\n",
       "key 'inputs.x.normal': is only read with source = \"normal\""},
      {model + "[inputs.x]\nsource = \"npz:a.npz:k\"\nvalues = [1.0]\n",
       "key 'inputs.x.values': is only read with source = \"values\""},
      {model + "[inputs.y]\nrole = \"label\"\none_hot = 10\n",
       "key 'inputs.y.one_hot': needs integer labels from a source (values, a file or a data set), not random"},
      {model + "[inputs.x]\nrole = \"data\"\nredraw = true\n",
       "key 'inputs.x.redraw': a data input is the searched tensor: a fresh draw every iteration would undo each step"},
      {model + "[train]\nlr = 0.1\n", "key 'train.lr': nothing trains (no optimizer)"},
      {model + "[train]\ncheckpoint = \"c.npz\"\n", "key 'train.checkpoint': nothing trains (no optimizer)"},
      {model + "loss = \"l\"\n[train]\noptimizer = \"none\"\nbatch = \"monitored\"\n",
       "key 'train.batch': nothing trains (no optimizer)"},
      {train + "optimizer = \"adam\"\nmomentum = 0.9\n",
       "key 'train.momentum': Adam has no momentum (it reads: lr, weight_decay, beta1, beta2, epsilon)"},
      {train + "optimizer = \"sgd\"\nepsilon = 1e-8\n", "key 'train.epsilon': SGD has no epsilon"},
      {train + "optimizer = \"sgd\"\nbeta1 = 0.5\n", "key 'train.beta1': SGD has no beta1"},
      {train + "optimizer = \"adagrad\"\ndecay = 0.9\n", "key 'train.decay': Adagrad has no decay"},
      {train + "optimizer = \"rmsprop\"\nnesterov = true\n", "key 'train.nesterov': RMSProp has no nesterov"},
      {train + "optimizer = \"adam\"\ncentered = true\n", "key 'train.centered': Adam has no centered"},
      {train + "optimizer = \"sgd\"\nnesterov = true\n",
       "key 'train.nesterov': needs a momentum (Nesterov's step is a momentum step)"},
      {model + "[train]\npretrain_steps = 10\n", "key 'train.pretrain_steps': nothing trains (no optimizer)"},
      {train + "optimizer = \"sgd\"\nmasks = \"reuse\"\n",
       "key 'train.masks': only a training step on the monitored batch could reuse its masks"},
      {train + "optimizer = \"sgd\"\nbatch = \"fresh\"\nmasks = \"fresh\"\n",
       "key 'train.masks': only a training step on the monitored batch could reuse its masks"},
      {train + "optimizer = \"sgd\"\nbatch = \"monitored\"\ndropout = false\nmasks = \"reuse\"\n",
       "key 'train.masks': the training step runs without dropout (train.dropout = false): there are no masks"},
      {train + "optimizer = \"sgd\"\n" + phase, "key 'train.optimizer': with train.phases each phase names its own"},
      {train + "params = [\"w\"]\n" + phase, "key 'train.params': is not read with train.phases"},
      {train + "checkpoint = \"c.npz\"\n" + phase, "key 'train.checkpoint': is not read with train.phases"},
      {train + "pretrain_steps = 3\n" + phase, "key 'train.pretrain_steps': is not read with train.phases"},
      {train + "[[train.phases]]\noptimizer = \"sgd\"\nparams = [\"w\"]\n", "key 'train.phases[0].loss': is required"},
      {train + "[[train.phases]]\nloss = \"d\"\nparams = [\"w\"]\n",
       "key 'train.phases[0].optimizer': is required"},
      {train + "[[train.phases]]\nloss = \"d\"\noptimizer = \"sgd\"\n",
       "key 'train.phases[0].params': must be a non-empty list"},
      {train + phase + phase, "key 'train.phases[1].params': 'w' is trained by an earlier phase too"},
      {train + phase + "steps = 0\n", "key 'train.phases[0].steps': must be a positive integer"},
      {train + phase + "beta1 = 0.5\n", "key 'train.phases[0].beta1': SGD has no beta1"},
      {train + phase + "dropout = true\n", "key 'train.phases[0].dropout': unknown key"},
      {train + "phases = 3\n", "key 'train.phases': must be an array of tables"},
      {model + "[search]\nobjective = \"max\"\n",
       "key 'search.objective': chooses the objective of one hazard: name it with search.target"},
      {model + "[search]\nobjective_value = \"v\"\n",
       "key 'search.objective_value': chooses the objective of one hazard: name it with search.target"},
      {model + "[search]\nstall_rule = true\ncraft_early = true\n",
       "key 'search.craft_early': and search.stall_rule: one rule for when crafted training joins"},
      {model + "[search]\nstall_rule = true\nweights_after_s = 5\n",
       "key 'search.stall_rule': and search.weights_after_s: a clock or the stall rule, not both"},
  };
  for (const auto& [toml, expected] : cases) {
    ScratchDir dir;
    auto m = read(dir, toml);
    ASSERT_FALSE(m) << "accepted:\n" << toml;
    EXPECT_NE(m.message().find(expected), std::string::npos) << "got:  " << m.message() << "\nwant: " << expected;
  }
  // What each rule does read stays accepted.
  ScratchDir dir;
  for (const std::string& ok : {train + "optimizer = \"sgd\"\nmomentum = 0.9\nnesterov = true\nweight_decay = 0.1\n",
                               train + "optimizer = \"adagrad\"\nepsilon = 1e-10\ninitial_accumulator = 0.1\n",
                               model + "[inputs.y]\nrole = \"label\"\nvalues = [1.0, 2.0]\none_hot = 3\nredraw = true\n",
                               model + "[inputs.z]\nrole = \"fixed\"\nsource = \"normal\"\nredraw = true\n",
                               train + "optimizer = \"sgd\"\nbatch = \"monitored\"\nmasks = \"reuse\"\n",
                               train + "optimizer = \"adam\"\nbatch = \"fresh\"\npretrain_steps = 100\n",
                               model + "[search]\ntarget = \"/Log\"\nobjective = \"min-abs\"\nobjective_value = \"v\"\n"
                                       "variables = [\"gain\"]\n",
                               model + "[search]\nstall_rule = true\ncraft_early = false\n"}) {
    auto m = read(dir, ok);
    EXPECT_TRUE(m) << m.message();
  }
  auto stall = read(dir, model + "[search]\nstall_rule = true\n");
  ASSERT_TRUE(stall) << stall.message();
  EXPECT_TRUE(stall->search.stall_rule);
  EXPECT_FALSE(stall->search.craft_early);
}

// A [batch] table may set the order alone: the size then comes from the model or the command line.
TEST(Manifest, ABatchTableWithoutASizeKeepsTheSizeOpen) {
  ScratchDir dir;
  auto m = read(dir, "model = \"m.onnx\"\n[batch]\nshuffle = false\n");
  ASSERT_TRUE(m) << m.message();
  EXPECT_EQ(m->batch_size, 0);
  EXPECT_FALSE(m->shuffle);
}

TEST(Manifest, AMissingFileSaysSo) {
  auto m = read_manifest("/nonexistent/m.toml");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.message(), "/nonexistent/m.toml: cannot open file: No such file or directory");
}

// Every manifest of the zoo and of the tests reads: the benchmark cannot lose a subject to a format change.
TEST(Manifest, EveryCommittedManifestReads) {
  namespace fs = std::filesystem;
  int read_ok = 0;
  for (const std::string& root : {std::string(GRIST_SOURCE_DIR) + "/zoo", std::string(GRIST_SOURCE_DIR) + "/tests"})
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".toml") continue;
      auto m = read_manifest(e.path().string());
      EXPECT_TRUE(m) << m.message();
      read_ok += m.is_ok();
    }
  EXPECT_GE(read_ok, 66);  // 64 zoo subjects and the two hunt fixtures
}

}  // namespace
}  // namespace grist
