// SPDX-License-Identifier: Apache-2.0
// The learned cost model's evaluator (scheduler/model.hpp): a hand-built tree gives the expected
// prediction, the shipped format parses, malformed files are refused naming the problem, and the
// family fallback predicts a variant the model does not know.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "scheduler/json.hpp"
#include "scheduler/model.hpp"
#include "sparseport/errors.hpp"

namespace {

using namespace sparseport;
using namespace sparseport::scheduler;

// Node 0: a <= 1.5 ? node 1 (leaf 10) : node 2; node 2: b <= 0 ? node 3 (leaf 20) : node 4 (leaf 30).
const char* const kModel = R"({
  "format": "sparseport-trees-1", "device_class": "test-x86_64", "features": ["f:a", "f:b"],
  "ops": {"spmm": {"margin": 0.25, "sigma": 0.125, "variants": {
    "spmm.rows": {"base": 0.5, "trees": [
      {"split": [0, -1, 1, -1, -1], "threshold": [1.5, 0, 0, 0, 0], "left": [1, 0, 3, 0, 0],
       "right": [2, 0, 4, 0, 0], "value": [0, 10, 0, 20, 30]},
      {"split": [-1], "threshold": [0], "left": [0], "right": [0], "value": [-1]}]},
    "family:balanced": {"base": 7, "trees": []}}}}})";

TEST(CostModel, AHandBuiltTreeGivesTheExpectedPrediction) {
  const CostModel m = CostModel::parse(kModel, "test");
  EXPECT_EQ(m.device_class(), "test-x86_64");
  ASSERT_NE(m.op("spmm"), nullptr);
  EXPECT_DOUBLE_EQ(m.op("spmm")->margin, 0.25);
  EXPECT_DOUBLE_EQ(m.op("spmm")->sigma, 0.125);
  // base 0.5 + first tree + second tree (-1)
  std::string how;
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.rows", m.columns({{"f:a", 1.0}, {"f:b", 5.0}}), &how), 9.5);
  EXPECT_EQ(how, "own");
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.rows", m.columns({{"f:a", 1.5}, {"f:b", 5.0}})), 9.5) << "<= goes left";
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.rows", m.columns({{"f:a", 2.0}, {"f:b", -1.0}})), 19.5);
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.rows", m.columns({{"f:b", 1.0}, {"f:a", 2.0}, {"f:zz", 9.0}})), 29.5)
      << "inputs by name, in any order, unknown ones ignored";
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.rows", m.columns({})), 9.5) << "a missing input reads 0";
  // A variant the model does not know is predicted by its mapping family's model.
  EXPECT_DOUBLE_EQ(*m.predict("spmm", "spmm.nnz_balanced", m.columns({}), &how), 7.0);
  EXPECT_EQ(how, "family:balanced");
  EXPECT_FALSE(m.predict("spmm", "spmm.hub_split", m.columns({})).has_value()) << "no model and no family model";
  EXPECT_FALSE(m.predict("sddmm", "sddmm.vec4", m.columns({})).has_value());
}

TEST(CostModel, MalformedModelsAreRefusedNamingTheProblem) {
  const auto refused = [](const std::string& text, const std::string& words) {
    try {
      (void)CostModel::parse(text, "bad.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  };
  refused("{\"format\": \"other\"}", "not a sparseport-trees-1 model");
  refused("{\"format\": \"sparseport-trees-1\", \"features\": [], \"ops\": {\"spmm\": ", "unexpected end");
  const std::string head = R"({"format": "sparseport-trees-1", "features": ["f:a"], "ops": {"spmm": {"variants": {"v": {"trees": [)";
  refused(head + R"({"split": [0, -1], "threshold": [1, 0], "left": [0, 0], "right": [1, 0], "value": [0, 1]}]}}}}})",
          "child outside");
  refused(head + R"({"split": [3, -1, -1], "threshold": [1, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0], "value": [0, 1, 2]}]}}}}})",
          "splits on feature 3");
  refused(head + R"({"split": [-1], "threshold": [], "left": [0], "right": [0], "value": [1]}]}}}}})", "differ in length");
}

TEST(CostModel, TheTrainersFixtureGivesTheTrainersPredictions) {
  // scheduler/model/fixture.py writes a small model in the shipped format and the predictions its
  // own evaluator made for a few rows; the C++ evaluator must give the same numbers.
  std::ifstream model(SPARSEPORT_SOURCE_DIR "/scheduler/models/test-fixture.json");
  std::ifstream expected(SPARSEPORT_SOURCE_DIR "/scheduler/model/fixture_expected.json");
  ASSERT_TRUE(model && expected) << "scheduler/models/test-fixture.json and scheduler/model/fixture_expected.json";
  std::stringstream ms, es;
  ms << model.rdbuf();
  es << expected.rdbuf();
  const CostModel m = CostModel::parse(ms.str(), "test-fixture.json");
  const Json doc = parse_json(es.str(), "fixture_expected.json");
  const std::string op = doc.get("op")->str;
  int cases = 0;
  for (const Json& row : doc.get("rows")->items) {
    std::vector<std::pair<std::string, double>> inputs;
    const Json* in = row.get("inputs");
    for (size_t i = 0; i < in->names.size(); ++i) inputs.emplace_back(in->names[i], in->values[i].num);
    const Json* predictions = row.get("expected");
    for (size_t i = 0; i < predictions->names.size(); ++i) {
      const std::string& variant = predictions->names[i];
      const Json& want = predictions->values[i];
      const std::optional<double> got = m.predict(op, variant, m.columns(inputs));
      ASSERT_TRUE(got.has_value()) << op << " " << variant;
      EXPECT_NEAR(*got, want.num, 1e-9 * (1 + std::abs(want.num))) << op << " " << variant << " case " << cases;
      ++cases;
    }
  }
  EXPECT_GE(cases, 3);
}

}  // namespace
