// SPDX-License-Identifier: Apache-2.0
// Stage 5 (DESIGN.md section 4, step 5, second half): a choice made on the probe sample is timed
// once at full size against the vendor on its first call. A choice that loses there is timed once
// more (its first call built its per-matrix state, which later calls do not pay) and, if it still
// loses, reverted to the fastest variant measured at full size (the vendor, or the probe's runner-up
// when it is faster still), not always to the vendor. The last call that runs is the final variant's, so the
// caller's output is the op's result whichever way the check goes.
//
// The vendor's full-size call is the check's whole overhead (the chosen variant's call is the op's
// own), and where the vendor is the slow one (GraphBLAS on the CPU: 2-5x our kernels) it alone cost
// 2-4 full-size calls of the op (issue 35). It is skipped where the probe already measured it at
// least kSkipMargin (3) times the chosen variant and the chosen variant's full-size call, timed
// first (and once more where the first, which pays first touches, does not), came within
// kScaleSlack (2) of the probe's linear extrapolation (probe time / work fraction), or of the op's
// memory floor where that is higher (a sample that fits in the caches extrapolates below what the
// full operands can stream: megarow:1000000:1:0.9 at F = 64 ran 3x its extrapolation on the 2-core
// CPU, its B and C 256 MB each). Why these two suffice: write the vendor's probe time V = c + v, c its fixed per-call
// cost (descriptors, a library's matrix wrap), v its part proportional to the work, and the chosen
// variant's probe time C, scaling linearly (which the second condition checks: the failure the
// check exists for, a variant falling off a cliff at full size, is 10x or more). At full size the
// vendor takes c + v / f against C / f, a ratio of at least v / C; with V >= 3 C and c <= V / 2 that
// is at least 1.5. So the skip keeps a variant the vendor would have beaten only where the vendor's
// fixed cost exceeds half its probe time. Neither constant is tuned on any matrix.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/context.hpp"

namespace sparseport::scheduler {

// The same two conditions serve a pick the cost model made alone (select_decide.cpp), with the
// model's predicted full-size times in place of the probe's (work fraction 1) and the vendor's
// prediction divided by 2^(2 sigma), sigma the model's held-out error of a predicted log2 ratio of
// two variants: the vendor is left out where it is predicted kSkipMargin times slower even two
// sigmas in its favour, and the pick then ran within kScaleSlack of its predicted time.
struct ProbeEvidence {
  double chosen_s = -1;      // the chosen variant's time on the probe sample (or predicted at full size)
  double vendor_s = -1;      // the vendor's
  double work_fraction = 0;  // the sample's share of the work (1: the model's full-size predictions)
  double floor_s = 0;        // the op's memory floor at full size (estimate.hpp), 0: unknown
  const char* source = "on the probe";
  bool usable() const { return chosen_s > 0 && vendor_s > 0 && work_fraction > 0 && work_fraction <= 1; }
};
constexpr double kSkipMargin = 3.0;
constexpr double kScaleSlack = 2.0;

// Where the probe cannot leave the vendor out (its margin below kSkipMargin, or the pick then ran
// over kScaleSlack its extrapolation), the vendor's full-size call may still be left out on the
// evidence of a block sample: kBlocks runs of consecutive rows holding kBlockFraction of the
// entries (more for short ops: block_fraction), spread over the matrix (ProbeSample::block_rows),
// each variant timed once on it. Why it is better evidence than the probe's: a strided sample keeps
// the hubs' share of the work but not the locality of neighbouring rows, and locality helps the
// variants unequally (mesh3d:80:80:80:0 at F = 64 on the 2-core VM: the vendor took 4.2x the pick
// on the probe and 1.9x at full size), where runs of real rows read B as the full op does. The
// vendor is left out where its time on the blocks, extrapolated linearly to full size, is at least
// kBlockMargin times the pick's full-size call (timed once more where the first, which pays first
// touches, falls short): the pick's side is measured, not extrapolated, and the margin, the 1.5
// that kSkipMargin's argument above guarantees at full size, covers the vendor's extrapolation
// erring in the pick's favour by up to a third. Its cost is that share of a full-size call per
// variant call (the vendor once, the pick twice, its first touching the sample's output), timed
// before the pick's full-size call; where the vendor is within kBlockMargin of the pick on the
// blocks, the check goes on as without them. Against the vendor's full-size call, which on the CPU
// (GraphBLAS, 1.6-2.3x our kernels at full size) alone cost 1.6-2.3 calls of a >= 1M-entry input's
// cold decision, whose target is 2 (issue 35). Used where the vendor's call on the blocks is
// predicted to last kBlockCallSeconds at least, so that a call's fixed costs stay a small part of it:
// GraphBLAS's are ~40 us a call on the 2-core VM (45 us on a 1000-entry graph where spmm.rows takes
// 8), which at 0.5 ms inflate the vendor's extrapolation by 8 % at most, so that a vendor left out
// is still 1.5 / 1.08 = 1.39x the pick or more. With 1 ms, the blocks missed the ops of 4-8 ms
// (1-5M entries at F = 16-32 on the VM), and their vendor's full-size call then cost 1.5-2 calls of
// the op: rmat:18:8 at F = 16 / 32, 3.40 / 3.16 full-size calls a cold decision against 1.64 / 1.45
// with 0.5 ms; er:500000:4e-6 2.70 / 1.83 against 1.59 / 1.12; band:1000000:4 at F = 16 3.54
// against 1.98; every vendor left out took 1.70-2.42x the pick at full size
// (benchmarks/results/2026-12-05-cpu-cold-block-threshold.md). Host-memory backends only: the
// device path has not been measured on a GPU.
constexpr int kBlocks = 4;
constexpr double kBlockFraction = 0.125;
constexpr double kBlockMargin = 1.5;
constexpr double kBlockCallSeconds = 0.5e-3;
// The fixed cost the threshold bounds is the vendor's (GraphBLAS's ~40 us a call; our kernels' are a
// few us), so it is the vendor's call on the blocks that must last kBlockCallSeconds: the share is
// the one at which the vendor's expected full-size time (the evidence's, extrapolated) gives such a
// call, at least kBlockFraction and at most kBlockFractionMax; 0 (no blocks) where even that share
// gives a shorter call. A skip then also needs the vendor's measured call on the blocks to have
// lasted kBlockCallSeconds (full_size_check), so that the bound holds for what was measured, not
// only for what was expected. At kBlockFractionMax the blocks cost a quarter of the vendor's
// full-size call and half of the pick's (the vendor once, the pick twice), which a skip saves 0.63
// vendor calls or more on (its vendor takes 1.5x the pick at least), and which a vendor within the
// margin wastes. The sample holds its share of A and of C while the check runs (ProbeSample), at
// most a quarter. Before, the share was set from the pick's expected time, so an op of under 2 ms
// got no blocks whatever the vendor took: copter2 (704k entries, F = 32, the 2-core VM) paid
// GraphBLAS's full-size 4.0 ms, 3.2 calls of its 1.27 ms op, in a cold decision of 8-9 ms.
constexpr double kBlockFractionMax = 0.25;

// The share of A's entries the block sample takes where the vendor is expected to take
// `vendor_expected_s` at full size (above).
inline double block_fraction(double vendor_expected_s) {
  if (!(vendor_expected_s > 0) || kBlockFractionMax * vendor_expected_s < kBlockCallSeconds) return 0;
  return std::clamp(kBlockCallSeconds / vendor_expected_s, kBlockFraction, kBlockFractionMax);
}

struct BlockTimes {
  double chosen_s = -1, vendor_s = -1;  // one call each on the block sample (negative: not measured)
  double work_fraction = 0;             // the block sample's entries over A's
  std::string description;
  bool usable() const { return chosen_s > 0 && vendor_s > 0 && work_fraction > 0 && work_fraction <= 1; }
};

struct CheckResult {
  std::string variant;  // what runs from now on
  bool reverted = false;
  std::vector<std::pair<std::string, double>> measured;  // full-size seconds, in the order timed
  double op_seconds = 0;  // the time of the final variant's last call (the op's own, not overhead)
  std::string reason;     // "; reverted: ..." or empty
  double vendor_first_s = -1;  // a device's vendor warm-up call (its per-matrix state built), -1: none
  double chosen_first_s = -1;  // the chosen variant's first call where it was timed twice, -1: once
  bool vendor_skipped = false;
  bool skipped_on_blocks = false;  // the block sample's evidence left it out, not the probe's margin
  double block_lead = 0;           // then: the vendor's time there extrapolated over the chosen's at full size
  std::string note;  // why the vendor was (or was not after all) left out, for the log and the reason
};

// `blocks`, where given, times the chosen variant and the vendor on a block sample holding the
// given share of A's entries (block_fraction).
CheckResult full_size_check(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
                            const std::string& chosen, const std::string& vendor, const std::string& runner_up,
                            const std::string& where, const ProbeEvidence& probe = {},
                            const std::function<BlockTimes(double fraction)>& blocks = {});

}  // namespace sparseport::scheduler
