// SPDX-License-Identifier: Apache-2.0
// Context, registry and naming: backend choice by name, environment and default; every known
// backend listed with its status; variant requests checked against what a plugin offers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

// Sets an environment variable for one scope and restores the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

}  // namespace

TEST(Context, ListsEveryKnownBackendWithItsStatus) {
  std::set<std::string> names;
  for (const sp::PluginInfo& p : sp::plugins()) {
    names.insert(p.name);
    if (p.status == sp::PluginStatus::available) {
      EXPECT_NE(p.table, nullptr) << p.name;
      EXPECT_TRUE(p.reason.empty()) << p.name << ": " << p.reason;
      EXPECT_FALSE(p.variants.empty()) << p.name;
    } else {
      EXPECT_FALSE(p.reason.empty()) << p.name << " is " << sp::name(p.status) << " without a reason";
    }
    if (p.status == sp::PluginStatus::not_compiled) {
      EXPECT_NE(p.reason.find("not compiled"), std::string::npos);
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"reference", "openmp", "cuda", "kokkos"}));
  EXPECT_EQ(sp::plugin("reference").status, sp::PluginStatus::available);
}

TEST(Context, ReferenceOffersADefaultVariantForEveryOp) {
  const sp::PluginInfo& ref = sp::plugin("reference");
  for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op) {
    int defaults = 0;
    for (const sp::VariantInfo& v : ref.variants) {
      if (v.op != op) continue;
      EXPECT_EQ(v.name.rfind(std::string(sp::op_name(v.op)) + ".", 0), 0u) << v.name << " does not start with its op";
      EXPECT_FALSE(v.doc.empty()) << v.name;
      defaults += v.is_default ? 1 : 0;
    }
    EXPECT_EQ(defaults, 1) << sp::op_name(static_cast<sparseport_op>(op));
  }
}

TEST(Context, CreatesByNameEnvironmentAndDefault) {
  EXPECT_EQ(sp::Context::create("reference").backend(), "reference");
  {
    ScopedEnv env("SPARSEPORT_BACKEND", "reference");
    EXPECT_EQ(sp::Context::create().backend(), "reference");
  }
  {
    ScopedEnv env("SPARSEPORT_BACKEND", "no-such-backend");
    EXPECT_THROW(sp::Context::create(), sp::InvalidArgument);
    EXPECT_EQ(sp::Context::create("reference").backend(), "reference") << "an explicit name beats the environment";
  }
  ScopedEnv env("SPARSEPORT_BACKEND", nullptr);
  EXPECT_EQ(sp::Context::create().plugin().name, SPARSEPORT_TEST_DEFAULT_BACKEND) << "the configure-time default";
}

TEST(Context, RefusesUnknownAndUnbuiltBackendsClearly) {
  const std::string unknown = message_of<sp::InvalidArgument>([] { sp::Context::create("fortran"); });
  EXPECT_NE(unknown.find("'fortran'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("reference"), std::string::npos) << "lists the known backends: " << unknown;

  EXPECT_THROW(sp::Context::create("reference:x"), sp::InvalidArgument);
  EXPECT_THROW(sp::Context::create("reference:1"), sp::InvalidArgument);

  for (const sp::PluginInfo& p : sp::plugins()) {
    if (p.status == sp::PluginStatus::not_compiled) {
      const std::string m = message_of<sp::NotCompiled>([&] { sp::Context::create(p.name); });
      EXPECT_NE(m.find("not compiled"), std::string::npos) << m;
    } else if (p.status == sp::PluginStatus::no_device) {
      const std::string m = message_of<sp::Unsupported>([&] { sp::Context::create(p.name); });
      EXPECT_NE(m.find(p.name), std::string::npos) << m;
    }
  }
}

TEST(Context, ThreadsAndMemory) {
  sp::Context ctx = sp::Context::create("reference");
  EXPECT_EQ(ctx.threads(), 0);
  ctx.set_threads(3);
  EXPECT_EQ(ctx.threads(), 3);
  EXPECT_EQ(ctx.exec().threads, 3);
  EXPECT_THROW(ctx.set_threads(-1), sp::InvalidArgument);

  const std::vector<double> src{1.5, -2.0, 3.25};
  sp::Buffer b = ctx.allocate(src.size() * sizeof(double));
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.bytes(), src.size() * sizeof(double));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << "host buffers are cache-line aligned";
  ctx.copy_to_backend(b.data(), src.data(), b.bytes());
  std::vector<double> back(src.size());
  ctx.copy_to_host(back.data(), b.data(), b.bytes());
  EXPECT_EQ(back, src);
  sp::Buffer moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_NE(moved.data(), nullptr);
  EXPECT_EQ(ctx.allocate(0).data(), nullptr);
}

TEST(Context, VariantRequestsAreChecked) {
  const sp::Context ctx = sp::Context::create("reference");
  const std::vector<int32_t> rowptr{0, 1}, colind{0};
  const std::vector<float> b{2.0f};
  std::vector<float> c{0.0f};
  const auto a = sp::make_csr<int32_t, float>(1, 1, 1, rowptr.data(), colind.data());
  sp::SpmmOptions opt;
  opt.variant = "spmm.no_such_variant";
  const std::string m = message_of<sp::Unsupported>(
      [&] { sp::spmm(ctx, a, sp::make_dense<float>(1, 1, 1, b.data()), sp::make_dense<float>(1, 1, 1, c.data()), opt); });
  EXPECT_NE(m.find("sparseport::spmm[reference]"), std::string::npos) << m;
  EXPECT_NE(m.find("spmm.serial"), std::string::npos) << "lists what is offered: " << m;
  EXPECT_EQ(c[0], 0.0f) << "nothing is written when an argument is refused";

  opt.variant = "spmm.serial_f64acc";
  sp::spmm(ctx, a, sp::make_dense<float>(1, 1, 1, b.data()), sp::make_dense<float>(1, 1, 1, c.data()), opt);
  EXPECT_EQ(c[0], 2.0f);
}

TEST(Names, OpsAndReducesRoundTrip) {
  for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op) {
    const auto o = static_cast<sparseport_op>(op);
    EXPECT_EQ(sp::op_from_name(sp::op_name(o)), o);
  }
  EXPECT_THROW(sp::op_from_name("spmv"), sp::InvalidArgument);
  for (sp::Reduce r : {sp::Reduce::sum, sp::Reduce::mean, sp::Reduce::max, sp::Reduce::min})
    EXPECT_EQ(sp::reduce_from_name(sp::name(r)), r);
  EXPECT_THROW(sp::reduce_from_name("prod"), sp::InvalidArgument);
  EXPECT_STREQ(sp::version(), SPARSEPORT_VERSION_STRING);
}
