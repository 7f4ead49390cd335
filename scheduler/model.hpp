// SPDX-License-Identifier: Apache-2.0
// Stage 2 of a cold decision: the learned cost model (DESIGN.md section 4, step 7). A tree
// ensemble per (op, variant), trained offline on generated graphs only (scheduler/model/train.py)
// and shipped per device class as JSON (scheduler/models/<class>.json, compiled into the library),
// predicts log2(t / floor) from the named inputs of features.hpp; the variant with the smallest
// prediction is the model's choice. A variant without a model of its own (another device's
// variant names) is predicted by the model of its mapping family ("family:rows" ...).
//
// Transfer (COGNATE's few-shot correction): on a device class without a model of its own the
// nearest model is used, and the full-size measurements the scheduler makes anyway correct it per
// variant: b_v = (sum of v's residuals + lambda * mean residual of all) / (n_v + lambda), lambda 2,
// residual = log2(measured / floor) - prediction. The measurements persist in the cache folder
// (transfer.jsonl), keyed by device hash, so the correction grows across processes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/estimate.hpp"
#include "scheduler/signature.hpp"
#include "sparseport/plan.hpp"

namespace sparseport::scheduler {

struct Tree {
  std::vector<int> split, left, right;  // split < 0: a leaf
  std::vector<double> threshold, value;
  double eval(const std::vector<double>& x) const;
};

struct VariantModel {
  double base = 0;
  std::vector<Tree> trees;
  double eval(const std::vector<double>& x) const;
};

struct OpModel {
  double margin = 0;  // log2 units: a predicted lead above it lets the model decide alone
  double sigma = 0;   // held-out error of a predicted difference between two variants
  std::map<std::string, VariantModel> variants;
};

class CostModel {
 public:
  // Parses the "sparseport-trees-1" JSON; throws InvalidArgument naming `origin` and the problem.
  static CostModel parse(const std::string& json, const std::string& origin);

  const std::string& device_class() const { return device_class_; }
  const std::vector<std::string>& features() const { return features_; }
  const OpModel* op(const std::string& name) const;
  // Inputs by name to the model's column order (an input the model does not know is ignored, one it
  // needs but is not given reads 0).
  std::vector<double> columns(const std::vector<std::pair<std::string, double>>& inputs) const;
  // Predicted log2(t / floor): the variant's own model, else its mapping family's; nullopt when
  // the op or both are missing. *how: "own" or "family:<mapping>".
  std::optional<double> predict(const std::string& op, const std::string& variant, const std::vector<double>& x,
                                std::string* how = nullptr) const;

 private:
  std::string device_class_;
  std::vector<std::string> features_;
  std::map<std::string, OpModel> ops_;
};

// The device class a signature belongs to: "cuda-sm90" (compute capability), "openmp-<arch>" ...
std::string device_class(const std::string& backend, const DeviceSignature& sig);

// Starts indexing the models on a thread of their own (Context::create calls it with the first
// context's backend) and parses that backend's there, so that its first decision does not wait for
// the parse (about 20 ms for a 1.8 MB model); that decision waits only for what is left of it.
// Other models are parsed when a decision first asks for them ("": every model). With `gpu` set,
// only that backend's models of that kind of device (a plugin on device memory: the GPU classes,
// kokkos-sm90; else the CPU ones, kokkos-x86_64): one backend may ship both.
void preload_models(const std::string& backend = "", std::optional<bool> gpu = std::nullopt);

// The shipped model for the class, else the nearest (the same hardware under another backend, then
// the same backend on the same kind of device, then another backend on the same kind, then any);
// null when none ships. *how says which and why ("own", "nearest: cuda-sm90 for cuda-sm100" ...).
// SPARSEPORT_MODEL_DIR (a folder of <class>.json) replaces the shipped models; SPARSEPORT_MODEL=off
// disables the model (the hand-written estimate ranks).
const CostModel* model_for(const std::string& device_class, std::string* how);

// Transfer: per-variant corrections learned from full-size measurements on this device.
struct Correction {
  std::map<std::string, std::pair<double, int>> residuals;  // variant -> (sum, count)
  int measurements = 0;
  double bias(const std::string& variant) const;  // b_v above
};
// The measurements recorded for this device hash and op in <cache_dir>/transfer.jsonl.
Correction load_correction(const std::string& cache_dir, const std::string& device_hash, const std::string& op);
// Appends one measurement (never throws; a failed write is warned once by the cache).
void record_measurement(const std::string& cache_dir, const std::string& device_hash, const std::string& op,
                        const std::string& variant, double residual);

// Stage 2 of a cold decision: every applicable variant's predicted time, best first.
struct Ranking {
  std::vector<Decision::Candidate> candidates;  // predicted_ms and estimate_ms filled, best predicted first
  std::map<std::string, double> raw;            // log2(t / floor) before the transfer correction
  // Variants ranked without a tree of their own (their family's tree, or the scaled estimate): the
  // model never measured them, so their rank says little; the timing stage times them (issue 35).
  std::vector<std::string> untrained;
  std::string model;                            // which model, and how (for the log and Decision::model)
  bool modelled = false;   // at least one variant predicted by a model (else: the estimate alone)
  bool transfer = false;   // not this device's own model: full-size measurements correct it
  // this device's own model has a tree of its own for every variant and leads by more than its margin
  bool confident = false;
  double lead = 0;         // log2(t(second) / t(best)), predicted
  double margin = 0;       // the op model's margin (0 without one)
  double sigma = 0;        // the op model's held-out error of a predicted log2 ratio (0 without one)
};
// A variant the model has no tree for (not even its family's: a vendor library the training
// machine lacked) is ranked by its estimate scaled by the median predicted/estimated ratio of the
// others, and the model is then never confident. Nor is it when a variant is predicted by its
// family's tree only (one added after the model was trained): its margin says nothing of that one. The transfer correction (load_correction) applies
// to every prediction when the model is not the device's own, unless `deterministic`.
Ranking rank(const std::string& op, const std::vector<std::string>& applicable, const std::vector<Estimate>& est,
             const std::vector<std::pair<std::string, double>>& inputs, double floor_s, const std::string& device_class,
             const std::string& device_hash, const std::string& cache_dir, bool deterministic);

}  // namespace sparseport::scheduler
