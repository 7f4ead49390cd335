// SPDX-License-Identifier: Apache-2.0
// Out of memory in the middle of an op (issue 34): every allocation an op family makes fails in
// turn. Step N arms the fault site as `site@N` (its first N allocations succeed, the next one
// fails, core/fault.hpp) and runs the family (tests/common/op_families.hpp: operands, the op
// with its decision, plans, formats and temporaries, each result checked in double precision).
// A step either raises OutOfMemory saying the failure was injected, or, where the library absorbed
// the failure, completes with a verified result. The steps end at the first run whose allocations
// all succeeded: every allocation point the family reaches has then failed once.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "op_families.hpp"
#include "sparseport/plan.hpp"
#include "core/fault.hpp"

namespace sparseport::test {

struct OomSteps {
  int out_of_memory = 0;  // steps that raised OutOfMemory
  int absorbed = 0;       // steps whose failed allocation the library recovered from
  bool completed = false; // a step ran with no failure left to inject
};

// `after_step(n)` runs after each step with nothing armed and the one-shot plan memo cleared: the
// caller checks that the context holds what it held before (and that it still works).
inline OomSteps fail_each_allocation(const sp::Context& ctx, const std::string& family, const std::string& site,
                                     const std::function<void(int)>& after_step, int max_steps = 2000) {
  const Graph g = make_graph(34);
  OomSteps r;
  for (int n = 0; n < max_steps && !r.completed; ++n) {
    SCOPED_TRACE(family + " with " + site + "@" + std::to_string(n));
    sp::detail::set_fault_sites(site + "@" + std::to_string(n));
    bool threw = false;
    try {
      run_family(ctx, family, g);
    } catch (const sp::OutOfMemory& e) {
      threw = true;
      const std::string what = e.what();
      EXPECT_NE(what.find("SPARSEPORT_FAULT_INJECT=" + site), std::string::npos) << what;
      EXPECT_NE(what.find("bytes"), std::string::npos) << "the size asked for is named: " << what;
    } catch (const std::exception& e) {
      threw = true;
      ADD_FAILURE() << "a failed allocation surfaced as something else than OutOfMemory: " << e.what();
    }
    const bool fired = sp::detail::set_fault_sites("").empty();  // a counted site that fired is no longer listed
    sp::clear_plan_memo();
    if (threw) {
      EXPECT_TRUE(fired) << "an error without the injected failure";
      ++r.out_of_memory;
    } else if (fired) {
      ++r.absorbed;
    } else {
      r.completed = true;
    }
    after_step(n);
    if (testing::Test::HasFatalFailure()) break;
  }
  EXPECT_TRUE(r.completed) << family << ": still failing after " << max_steps << " steps";
  EXPECT_GT(r.out_of_memory, 0) << family << ": no step failed, so no allocation was reached";
  // The context is still usable: the family once more, unarmed, every result checked.
  EXPECT_NO_THROW(run_family(ctx, family, g)) << family << " after the failures";
  return r;
}

}  // namespace sparseport::test
