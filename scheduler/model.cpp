// SPDX-License-Identifier: Apache-2.0
#include "scheduler/model.hpp"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

#include "scheduler/cache.hpp"
#include "scheduler/estimate.hpp"
#include "scheduler/json.hpp"
#include "scheduler/options.hpp"
#include "sparseport/errors.hpp"

namespace sparseport::scheduler {

// ---- evaluation --------------------------------------------------------------------------------

double Tree::eval(const std::vector<double>& x) const {
  size_t n = 0;
  // A well-formed tree ends at a leaf within its node count; the bound guards a malformed file.
  for (size_t steps = 0; steps <= split.size() && split[n] >= 0; ++steps)
    n = static_cast<size_t>(x[static_cast<size_t>(split[n])] <= threshold[n] ? left[n] : right[n]);
  return value[n];
}

double VariantModel::eval(const std::vector<double>& x) const {
  double s = base;
  for (const Tree& t : trees) s += t.eval(x);
  return s;
}

const OpModel* CostModel::op(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<double> CostModel::columns(const std::vector<std::pair<std::string, double>>& inputs) const {
  std::vector<double> x(features_.size(), 0.0);
  for (size_t i = 0; i < features_.size(); ++i)
    for (const auto& [name, v] : inputs)
      if (name == features_[i]) x[i] = v;
  return x;
}

std::optional<double> CostModel::predict(const std::string& op_name, const std::string& variant,
                                         const std::vector<double>& x, std::string* how) const {
  const OpModel* m = op(op_name);
  if (m == nullptr) return std::nullopt;
  if (auto it = m->variants.find(variant); it != m->variants.end()) {
    if (how != nullptr) *how = "own";
    return it->second.eval(x);
  }
  const std::string family = "family:" + mapping_name(variant);
  if (auto it = m->variants.find(family); it != m->variants.end()) {
    if (how != nullptr) *how = family;
    return it->second.eval(x);
  }
  return std::nullopt;
}

// ---- parsing ----------------------------------------------------------------------------------

CostModel CostModel::parse(const std::string& json, const std::string& origin) {
  const Json doc = parse_json(json, "sparseport scheduler: cost model " + origin);
  const auto bad = [&](const std::string& what) {
    return InvalidArgument("sparseport scheduler: cost model " + origin + ": " + what);
  };
  const Json* format = doc.get("format");
  if (format == nullptr || format->str != "sparseport-trees-1")
    throw bad("not a sparseport-trees-1 model (\"format\" is missing or another)");
  CostModel m;
  if (const Json* c = doc.get("device_class")) m.device_class_ = c->str;
  const Json* features = doc.get("features");
  if (features == nullptr || features->kind != Json::array) throw bad("\"features\" is not a list");
  for (const Json& f : features->items) m.features_.push_back(f.str);
  const Json* ops = doc.get("ops");
  if (ops == nullptr || ops->kind != Json::object) throw bad("\"ops\" is not an object");
  const auto ints = [&](const Json* a, const std::string& where) {
    if (a == nullptr || a->kind != Json::array || !a->items.empty()) throw bad(where + " is not a list of numbers");
    return std::vector<int>(a->nums.begin(), a->nums.end());
  };
  const auto reals = [&](const Json* a, const std::string& where) {
    if (a == nullptr || a->kind != Json::array || !a->items.empty()) throw bad(where + " is not a list of numbers");
    return a->nums;
  };
  for (size_t oi = 0; oi < ops->names.size(); ++oi) {
    const std::string& op_name = ops->names[oi];
    const Json& o = ops->values[oi];
    OpModel om;
    if (const Json* v = o.get("margin")) om.margin = v->num;
    if (const Json* v = o.get("sigma")) om.sigma = v->num;
    const Json* variants = o.get("variants");
    if (variants == nullptr || variants->kind != Json::object) throw bad(op_name + ": \"variants\" is not an object");
    for (size_t vi = 0; vi < variants->names.size(); ++vi) {
      const std::string& vname = variants->names[vi];
      const Json& vm = variants->values[vi];
      VariantModel model;
      if (const Json* b = vm.get("base")) model.base = b->num;
      const Json* trees = vm.get("trees");
      if (trees == nullptr || trees->kind != Json::array) throw bad(vname + ": \"trees\" is not a list");
      for (size_t k = 0; k < trees->items.size(); ++k) {
        const Json& tj = trees->items[k];
        const std::string where = vname + " tree " + std::to_string(k);
        Tree t{ints(tj.get("split"), where + " split"), ints(tj.get("left"), where + " left"),
               ints(tj.get("right"), where + " right"), reals(tj.get("threshold"), where + " threshold"),
               reals(tj.get("value"), where + " value")};
        const size_t n = t.split.size();
        if (n == 0 || t.left.size() != n || t.right.size() != n || t.threshold.size() != n || t.value.size() != n)
          throw bad(where + ": the node arrays differ in length or are empty");
        for (size_t i = 0; i < n; ++i) {
          if (t.split[i] < 0) continue;
          if (static_cast<size_t>(t.split[i]) >= m.features_.size())
            throw bad(where + ": node " + std::to_string(i) + " splits on feature " + std::to_string(t.split[i]) +
                      " of " + std::to_string(m.features_.size()));
          if (t.left[i] <= static_cast<int>(i) || t.right[i] <= static_cast<int>(i) || static_cast<size_t>(t.left[i]) >= n ||
              static_cast<size_t>(t.right[i]) >= n)
            throw bad(where + ": node " + std::to_string(i) + " has a child outside (" + std::to_string(i) + ", " +
                      std::to_string(n) + ")");
        }
        model.trees.push_back(std::move(t));
      }
      om.variants.emplace(vname, std::move(model));
    }
    m.ops_.emplace(op_name, std::move(om));
  }
  return m;
}

// ---- which model -------------------------------------------------------------------------------

std::string device_class(const std::string& backend, const DeviceSignature& sig) {
  // The kokkos plugin's signature names its execution space, not a kind: on Kokkos-CUDA (or HIP,
  // SYCL) it is a GPU all the same, and must not be taken for the host it runs beside (its class
  // would be kokkos-x86_64, whose model is the Kokkos-OpenMP one). Without a compute capability it
  // is <backend>-smunknown: a GPU class with no model of its own (model_for() then takes a GPU's).
  const std::string space = sig.value("exec_space");
  if (sig.value("kind") == "gpu" || space == "Cuda" || space == "HIP" || space == "SYCL" || space == "OpenMPTarget") {
    std::string cc = sig.value("compute_capability");
    cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
    return backend + "-sm" + (cc.empty() ? "unknown" : cc);
  }
#if defined(__x86_64__)
  return backend + "-x86_64";
#elif defined(__aarch64__)
  return backend + "-aarch64";
#else
  return backend + "-cpu";
#endif
}

namespace detail_models {
// The models compiled into the library (generated from scheduler/models/*.json at configure time).
const std::vector<std::pair<std::string, const char*>>& shipped();
}  // namespace detail_models

namespace {

// A model's text is indexed by its device class at once (a scan of its head for "device_class")
// and parsed when a decision first asks for that class, or by preload_models() for the context's
// backend. Parsing every shipped model on the preload thread (cuda-sm90's 1.7 MB on a CPU backend
// too) took a core from a 2-thread OpenMP team for the process's first ~100 ms on the 2-core CPU:
// a descheduled team thread held its barrier for a tick, and early kokkos calls took exactly 8 or
// 12 ms (4 of 4 oracle runs of 4elt; 0 of 4 with SPARSEPORT_MODEL=off).
struct Entry {
  std::string text;  // the JSON (a copy: shipped models are small next to a parse)
  std::string origin;
  std::unique_ptr<CostModel> model;  // null until parsed
  bool failed = false;
};
struct Catalogue {
  std::map<std::string, Entry> models;  // by device class
};

// The models of a folder (SPARSEPORT_MODEL_DIR), or the shipped ones for "": indexed once each.
// Never destroyed: preload_models() may still be parsing on its own thread when the process ends.
std::mutex& catalogue_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

// The device class a model's JSON names, from its text ("" if it names none): the first
// "device_class": "..." pair. A model whose class this misreads fails its parse later, warned.
std::string class_in(const std::string& text) {
  const size_t key = text.find("\"device_class\"");
  if (key == std::string::npos) return "";
  const size_t open = text.find('"', text.find(':', key));
  const size_t close = open == std::string::npos ? open : text.find('"', open + 1);
  return close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
}

// Called with catalogue_mutex() held.
Catalogue& catalogue_locked(const std::string& dir) {
  // Initialised under the lock, which fork() takes first (preload_models): a fork never copies
  // this static's initialisation guard held by the model thread. It did once in 48 runs on the
  // GPU machine: the child's first decision waited on the guard forever.
  static auto* loaded = new std::map<std::string, std::unique_ptr<Catalogue>>;
  std::unique_ptr<Catalogue>& slot = (*loaded)[dir];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<Catalogue>();
  Catalogue& out = *slot;
  const auto add = [&](std::string text, const std::string& origin) {
    const std::string cls = class_in(text);
    if (cls.empty()) {
      warn(origin + " names no device_class; that model is not used");
      return;
    }
    Entry& e = out.models[cls];
    e = Entry{std::move(text), origin, nullptr, false};
  };
  if (dir.empty()) {
    for (const auto& [name, text] : detail_models::shipped()) add(text, "shipped " + name);
    return out;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    add(ss.str(), entry.path().string());
  }
  if (ec) warn("SPARSEPORT_MODEL_DIR=" + dir + " cannot be read: " + ec.message());
  return out;
}

// The parsed model of an entry (null if its text does not parse: warned once). Called with
// catalogue_mutex() held.
const CostModel* parsed(Entry& e) {
  if (e.model == nullptr && !e.failed) {
    try {
      e.model = std::make_unique<CostModel>(CostModel::parse(e.text, e.origin));
    } catch (const Error& err) {
      e.failed = true;
      warn(std::string(err.what()) + "; that model is not used");
    }
  }
  return e.model.get();
}

std::string backend_of(const std::string& cls) { return cls.substr(0, cls.find('-')); }
// The hardware half of a device class ("x86_64" of openmp-x86_64, "sm90" of cuda-sm90).
std::string hardware_of(const std::string& cls) {
  const size_t dash = cls.find('-');
  return dash == std::string::npos ? std::string() : cls.substr(dash + 1);
}
bool is_gpu_class(const std::string& cls) { return hardware_of(cls).rfind("sm", 0) == 0; }

}  // namespace

void preload_models(const std::string& backend, std::optional<bool> gpu) {
  if (const char* off = std::getenv("SPARSEPORT_MODEL"); off != nullptr && std::string(off) == "off") return;
  const char* dir = std::getenv("SPARSEPORT_MODEL_DIR");
  // fork() while the thread parses would copy its lock, held, into the child, whose first decision
  // would then wait for it forever (issue 34). A fork waits for the parse instead (it holds the
  // lock throughout), and both processes unlock their copy. Forking while the caller's own threads
  // are inside SparsePort calls is not supported (README, "Threads and processes").
  static std::once_flag atfork;
  std::call_once(atfork, [] {
    (void)catalogue_mutex();  // its own guard is taken here, before the thread exists
    (void)pthread_atfork([] { catalogue_mutex().lock(); }, [] { catalogue_mutex().unlock(); },
                         [] { catalogue_mutex().unlock(); });
  });
  try {
    // Indexes the models and parses those of this backend (the ones its decisions will ask for).
    // Kokkos ships a CPU's and a GPU's model (kokkos-x86_64, kokkos-sm90); a Kokkos-OpenMP process
    // parses only the first: the other's 0.6 MB took 4 ms more of a core on the 2-core CPU, where a
    // core taken from the team at start-up costs its early calls a scheduler tick (above).
    std::thread([d = std::string(dir != nullptr ? dir : ""), backend, gpu] {
      std::lock_guard<std::mutex> lock(catalogue_mutex());
      for (auto& [cls, e] : catalogue_locked(d).models)
        if (backend.empty() || (backend_of(cls) == backend && (!gpu || is_gpu_class(cls) == *gpu))) (void)parsed(e);
    }).detach();
  } catch (const std::system_error&) {
    // No thread to spare: the first decision parses them itself.
  }
}

const CostModel* model_for(const std::string& cls, std::string* how) {
  if (const char* off = std::getenv("SPARSEPORT_MODEL"); off != nullptr && std::string(off) == "off") {
    if (how != nullptr) *how = "SPARSEPORT_MODEL=off";
    return nullptr;
  }
  const char* env_dir = std::getenv("SPARSEPORT_MODEL_DIR");
  const std::string dir = env_dir != nullptr ? env_dir : "";
  // Held while a model is looked up and, the first time, parsed; the models are never destroyed,
  // so the pointer returned stays valid after the lock is released.
  std::lock_guard<std::mutex> lock(catalogue_mutex());
  Catalogue& c = catalogue_locked(dir);
  if (auto it = c.models.find(cls); it != c.models.end())
    if (const CostModel* m = parsed(it->second)) {
      if (how != nullptr) *how = "own (" + cls + ")";
      return m;
    }
  // Nearest, in this order: the same hardware under another backend (the openmp model for
  // kokkos-x86_64, the cuda one for a Kokkos-CUDA class: the same cores or SMs, caches and memory,
  // whose times the model's floor ratios describe); the same backend on another device of the same
  // kind (an H100 model on a GPU of another compute capability, the x86_64 model on aarch64);
  // another backend on the same kind of device; any other. Never a CPU's model for a GPU while a
  // GPU's exists, or the reverse: the cuda model, first by name, had ranked kokkos's host variants
  // by a GPU's behaviour. Ties by name order.
  const auto rank_of = [&](const std::string& name) {
    if (!hardware_of(cls).empty() && hardware_of(name) == hardware_of(cls)) return 0;
    const bool same_kind = is_gpu_class(name) == is_gpu_class(cls);
    if (same_kind && backend_of(name) == backend_of(cls)) return 1;
    return same_kind ? 2 : 3;
  };
  static const char* const kWhy[] = {"another backend, same hardware", "same backend", "another backend, same kind of device",
                                     "another backend"};
  for (int r = 0; r < 4; ++r)
    for (auto& [name, e] : c.models) {
      if (name == cls || name.rfind("test", 0) == 0 || rank_of(name) != r) continue;
      if (const CostModel* m = parsed(e)) {
        if (how != nullptr) *how = "nearest: " + m->device_class() + " for " + cls + " (" + kWhy[r] + ")";
        return m;
      }
    }
  if (how != nullptr) *how = "no model ships for " + cls;
  return nullptr;
}

// ---- ranking -----------------------------------------------------------------------------------

Ranking rank(const std::string& op, const std::vector<std::string>& applicable, const std::vector<Estimate>& est,
             const std::vector<std::pair<std::string, double>>& inputs, double floor_s, const std::string& device_class,
             const std::string& device_hash, const std::string& cache_dir, bool deterministic) {
  Ranking r;
  std::string how;
  const CostModel* model = model_for(device_class, &how);
  const OpModel* om = model != nullptr ? model->op(op) : nullptr;
  r.transfer = how.rfind("own", 0) != 0 && how != "SPARSEPORT_MODEL=off";
  const Correction corr = r.transfer && !deterministic ? load_correction(cache_dir, device_hash, op) : Correction{};
  int predicted = 0, own = 0;    // variants predicted at all, and by a tree of their own
  std::vector<double> ratios;  // predicted / estimate of the variants the model knows
  for (const std::string& v : applicable) {
    Decision::Candidate c;
    c.variant = v;
    for (const Estimate& e : est)
      if (e.variant == v) c.estimate_ms = e.seconds * 1e3;
    if (om != nullptr) {
      std::vector<std::pair<std::string, double>> in = inputs;
      in.emplace_back(kEstimateInput, std::log2(std::max(c.estimate_ms * 1e-3, 1e-12) / floor_s));
      std::string tree;
      if (const std::optional<double> y = model->predict(op, v, model->columns(in), &tree)) {
        r.raw[v] = *y;
        ratios.push_back(floor_s * std::exp2(*y) * 1e3 / c.estimate_ms);
        ++predicted;
        own += tree == "own" ? 1 : 0;
        if (tree != "own") r.untrained.push_back(v);
      } else {
        r.untrained.push_back(v);
      }
    }
    r.candidates.push_back(c);
  }
  const bool all_predicted = om != nullptr && predicted == static_cast<int>(applicable.size());
  if (predicted == 0) r.untrained.clear();  // no model at all: the estimate ranks all, as before
  double scale = 1;
  if (predicted > 0 && !all_predicted) {
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    scale = ratios[ratios.size() / 2];
  }
  for (Decision::Candidate& c : r.candidates) {
    auto it = r.raw.find(c.variant);
    const double raw = it != r.raw.end() ? it->second : std::log2(c.estimate_ms * 1e-3 * scale / floor_s);
    r.raw[c.variant] = raw;
    c.predicted_ms = floor_s * std::exp2(raw + corr.bias(c.variant)) * 1e3;
  }
  std::stable_sort(r.candidates.begin(), r.candidates.end(),
                   [](const Decision::Candidate& a, const Decision::Candidate& b) { return a.predicted_ms < b.predicted_ms; });
  const std::string transfer_note =
      corr.measurements > 0 ? " + " + std::to_string(corr.measurements) + " transfer measurements" : "";
  r.modelled = predicted > 0;
  r.model = all_predicted ? how + transfer_note
            : predicted > 0 ? how + transfer_note + ", the estimate for the variants it lacks"
                            : "estimate (" + (om == nullptr ? how : "the model has no tree for these variants") + ")";
  r.margin = om != nullptr ? om->margin : 0;
  r.sigma = om != nullptr ? om->sigma : 0;
  if (r.candidates.size() >= 2) r.lead = std::log2(r.candidates[1].predicted_ms / r.candidates[0].predicted_ms);
  // Only this device's own model decides alone: a borrowed one's margin was measured elsewhere.
  r.confident = own == static_cast<int>(applicable.size()) && !r.transfer && r.margin > 0 && r.lead > r.margin;
  return r;
}

// ---- transfer ----------------------------------------------------------------------------------

double Correction::bias(const std::string& variant) const {
  constexpr double kLambda = 2;
  double all = 0;
  int n = 0;
  for (const auto& [v, sc] : residuals) all += sc.first, n += sc.second;
  const double mean = n > 0 ? all / n : 0;
  auto it = residuals.find(variant);
  const double sum = it == residuals.end() ? 0 : it->second.first;
  const int count = it == residuals.end() ? 0 : it->second.second;
  return (sum + kLambda * mean) / (count + kLambda);
}

Correction load_correction(const std::string& cache_dir, const std::string& device_hash, const std::string& op) {
  Correction c;
  for (Record& r : CacheFile(cache_dir, "transfer.jsonl").read()) {
    if (r["device"] != device_hash || r["op"] != op) continue;
    auto& sc = c.residuals[r["variant"]];
    sc.first += std::strtod(r["residual"].c_str(), nullptr);
    ++sc.second;
    ++c.measurements;
  }
  return c;
}

void record_measurement(const std::string& cache_dir, const std::string& device_hash, const std::string& op,
                        const std::string& variant, double residual) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", residual);
  const Record r{{"schema", std::to_string(kCacheSchema)},
                 {"key", device_hash + "/" + op + "/" + variant},
                 {"versions", "transfer"},
                 {"device", device_hash},
                 {"op", op},
                 {"variant", variant},
                 {"residual", buf}};
  std::string why;
  (void)CacheFile(cache_dir, "transfer.jsonl").try_append(r, &why);
}

}  // namespace sparseport::scheduler
