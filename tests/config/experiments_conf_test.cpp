// GRIST's experiments.conf (an INI file read as is): every [parameter] key over the defaults, the decayed
// step, booleans and variants as the study wrote them, and every malformed line or value refused with the
// file, the line and the key.
#include "config/config.h"

#include <gtest/gtest.h>

#include "data/test_files.h"
#include "util/ini.h"

namespace grist {
namespace {

using testing::ScratchDir;

Status apply(const std::string& text, SearchConfig& c) {
  auto ini = parse_ini(text, "experiments.conf");
  if (!ini) return ini.error();
  return apply_experiments_conf(*ini, "experiments.conf", c);
}

TEST(ExperimentsConf, TheStudysFileSetsEveryParameter) {
  // The study's own layout: a [parameter] section, comments on lines of their own, Python booleans.
  const std::string text =
      "# GRIST experiments.conf\n"
      "[parameter]\n"
      "time_limit = 1.5\n"
      "; a comment\n"
      "change=0.2\n"
      "decay = True\n"
      "decay_steps = 300\n"
      "decay_rate = 0.75\n"
      "delta_type = grist\n"
      "switch_data = False   # GRIST-ns\n"
      "drop_rate = 0.2\n";
  SearchConfig c;
  ASSERT_TRUE(apply(text, c)) << apply(text, c).message();
  EXPECT_EQ(c.time_limit, 1.5);
  EXPECT_EQ(c.change, 0.2);
  EXPECT_TRUE(c.decay);
  EXPECT_EQ(c.decay_steps, 300);
  EXPECT_EQ(c.decay_rate, 0.75);
  EXPECT_EQ(c.delta_type, "grist");
  EXPECT_FALSE(c.switch_data);
  EXPECT_EQ(c.drop_rate, 0.2);
  // grist's own settings are not the file's business: their defaults stay.
  EXPECT_EQ(c.variant, Variant::Grist);
  EXPECT_EQ(c.switch_every, 100);
  EXPECT_EQ(c.max_iterations, 0);
}

TEST(ExperimentsConf, DefaultsAreTheStudys) {
  const SearchConfig c;
  EXPECT_EQ(c.time_limit, 30.0);
  EXPECT_EQ(c.change, 0.15);
  EXPECT_FALSE(c.decay);
  EXPECT_EQ(c.decay_steps, 10000);
  EXPECT_EQ(c.decay_rate, 0.5);
  EXPECT_TRUE(c.switch_data);
  EXPECT_EQ(c.drop_rate, 0.05);
  EXPECT_EQ(c.switch_score, SwitchScore::Score);
  EXPECT_FALSE(c.faithful);
}

// ε_t = max(ε · rate^⌊t / steps⌋, ε · 1e-4).
TEST(ExperimentsConf, TheDecayedStepHalvesEveryDecayStepsDownToAFloor) {
  SearchConfig c;
  c.change = 0.3;
  EXPECT_EQ(c.epsilon_at(1), 0.3);
  EXPECT_EQ(c.epsilon_at(1'000'000), 0.3);  // no decay
  c.decay = true;
  c.decay_steps = 200;
  c.decay_rate = 0.5;
  EXPECT_EQ(c.epsilon_at(199), 0.3);
  EXPECT_EQ(c.epsilon_at(200), 0.15);
  EXPECT_EQ(c.epsilon_at(399), 0.15);
  EXPECT_EQ(c.epsilon_at(400), 0.075);
  EXPECT_DOUBLE_EQ(c.epsilon_at(200 * 40), 0.3 * 1e-4);  // 0.5^40 is below the floor
  c.decay_steps = 0;
  EXPECT_EQ(c.epsilon_at(500), 0.3);  // a zero period never decays
}

TEST(ExperimentsConf, BooleansVariantsAndSwitchScoresAsWritten) {
  for (const char* t : {"True", "true", "1", "yes", "on", "TRUE"}) EXPECT_TRUE(*parse_bool(t)) << t;
  for (const char* f : {"False", "false", "0", "no", "off"}) EXPECT_FALSE(*parse_bool(f)) << f;
  EXPECT_FALSE(parse_bool("maybe"));
  EXPECT_EQ(parse_bool("2").message(), "'2' is not a boolean (True or False)");
  EXPECT_EQ(*parse_variant("grist"), Variant::Grist);
  EXPECT_EQ(*parse_variant("grist-ns"), Variant::GristNs);
  EXPECT_EQ(*parse_variant("grist_ns"), Variant::GristNs);
  EXPECT_EQ(*parse_variant("original"), Variant::Original);
  EXPECT_EQ(*parse_variant("random"), Variant::Random);
  EXPECT_EQ(parse_variant("Grist").message(), "unknown variant 'Grist' (expected grist, grist-ns, original or random)");
  EXPECT_EQ(*parse_switch_score("score"), SwitchScore::Score);
  EXPECT_EQ(*parse_switch_score("fifo"), SwitchScore::Fifo);
  EXPECT_FALSE(parse_switch_score("lifo"));
}

TEST(Ini, SectionsKeysLinesAndComments) {
  auto ini = parse_ini("top = 1\n\n[a]\n  k = v with spaces  \nj=2 # inline\n[ b ]\nk=\n", "x.ini");
  ASSERT_TRUE(ini) << ini.message();
  EXPECT_EQ(ini->at("").at("top").value, "1");
  EXPECT_EQ(ini->at("").at("top").line, 1);
  EXPECT_EQ(ini->at("a").at("k").value, "v with spaces");
  EXPECT_EQ(ini->at("a").at("k").line, 4);
  EXPECT_EQ(ini->at("a").at("j").value, "2");
  EXPECT_EQ(ini->at("b").at("k").value, "");  // the section name is trimmed; an empty value is a value
  EXPECT_EQ(ini->at("b").at("k").line, 7);
  EXPECT_EQ(ini->size(), 3u);
}

TEST(Ini, ReadsAFileAndSaysWhenItIsMissing) {
  ScratchDir dir;
  auto ini = read_ini(dir.write("e.conf", "[parameter]\nchange = 0.5\r\n"));  // CRLF from Windows editors
  ASSERT_TRUE(ini) << ini.message();
  EXPECT_EQ(ini->at("parameter").at("change").value, "0.5");
  auto missing = read_ini("/nonexistent/e.conf");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(), "/nonexistent/e.conf: cannot open file: No such file or directory");
}

// Every malformed file: one line naming the file, the line and, for a value, its key.
TEST(ExperimentsConf, EveryMalformedLineOrValueIsRefusedWithFileLineAndKey) {
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"[parameter\nchange = 1\n", "experiments.conf:1: a section header must end with ']'"},
      {"[parameter]\nchange 0.1\n", "experiments.conf:2: expected key=value, got 'change 0.1'"},
      {"[parameter]\n= 0.1\n", "experiments.conf:2: a key is missing before '='"},
      {"[params]\nchange = 0.1\n", "experiments.conf: unknown section [params] (experiments.conf has only [parameter])"},
      {"change = 0.1\n", "experiments.conf: unknown section [] "},
      {"[parameter]\nchange = abc\n", "experiments.conf:2: key 'change': 'abc' is not a number"},
      {"[parameter]\nchange = 0.1x\n", "experiments.conf:2: key 'change': '0.1x' is not a number"},
      {"[parameter]\nchange = 0\n", "experiments.conf:2: key 'change': must be positive"},
      {"[parameter]\nchange = nan\n", "experiments.conf:2: key 'change': 'nan' is not a number"},
      {"[parameter]\n\ntime_limit = 0\n", "experiments.conf:3: key 'time_limit': must be positive (minutes)"},
      {"[parameter]\ntime_limit = -1\n", "experiments.conf:2: key 'time_limit': -1 is outside [0, 1000000000]"},
      {"[parameter]\ndecay = sometimes\n", "experiments.conf:2: key 'decay': 'sometimes' is not a boolean"},
      {"[parameter]\nswitch_data = 2\n", "experiments.conf:2: key 'switch_data': '2' is not a boolean"},
      {"[parameter]\ndecay_steps = 0\n", "experiments.conf:2: key 'decay_steps': 0 is outside [1, "},
      {"[parameter]\ndecay_rate = 1.5\n", "experiments.conf:2: key 'decay_rate': 1.5 is outside [0, 1]"},
      {"[parameter]\ndrop_rate = -0.1\n", "experiments.conf:2: key 'drop_rate': -0.1 is outside [0, 1]"},
      {"[parameter]\ndelta_type = ranum\n", "experiments.conf:2: key 'delta_type': only 'grist' (sign × change) exists"},
      {"[parameter]\nchnage = 0.1\n", "experiments.conf:2: key 'chnage': unknown key (expected time_limit, change"},
  };
  int refused = 0;
  for (const Case& c : cases) {
    SearchConfig config;
    Status st = apply(c.text, config);
    if (st) {
      ADD_FAILURE() << "accepted:\n" << c.text;
      continue;
    }
    EXPECT_EQ(st.message().rfind(c.expected, 0), 0u) << "got:  " << st.message() << "\nwant: " << c.expected;
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
    ++refused;
  }
  EXPECT_EQ(refused, static_cast<int>(std::size(cases)));
}

}  // namespace
}  // namespace grist
