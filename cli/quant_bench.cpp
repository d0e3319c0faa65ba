// `tunebench bench dequant`: the CUDA dequantisation kernels (kernels/dequant_4bit.cu) checked
// against the LibTorch path on odd shapes, then timed against it on one large weight. CUDA only:
// the GPU machine's scripts/gpu-check runs it, since that machine builds no Qt tests.
#include "cli/commands.h"

#include "quant/quant_check.h"
#include "util/error.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace tb {

using nlohmann::json;

namespace {

struct Format {
    const char* name;
    QuantOptions options;
};

const std::vector<Format>& formats()
{
    static const std::vector<Format> all = {{"nf4", {QuantKind::Nf4, false, false}},
                                            {"nf4+dq", {QuantKind::Nf4, true, false}},
                                            {"fp4", {QuantKind::Fp4, false, false}},
                                            {"fp4+dq", {QuantKind::Fp4, true, false}},
                                            {"int8", {QuantKind::Int8, false, false}}};
    return all;
}

// The shapes of tests/kernels/test_quant_kernels.cpp: one element, odd counts, partial last blocks
// and a partial last group of 256 absmax values.
const std::vector<std::pair<int64_t, int64_t>> kCheckShapes = {{1, 1},    {3, 7},   {5, 13},
                                                               {17, 129}, {33, 65}, {64, 4100}};

// Every format, output dtype and shape: fp32 bit-identical, bf16 / fp16 within one ulp.
json checks(bool& ok)
{
    json rows = json::array();
    uint64_t seed = 11;
    for (const Format& f : formats())
        for (const char* dtype : {"fp32", "bf16", "fp16"})
            for (const auto& [r, c] : kCheckShapes) {
                const KernelCheck k = checkDequantKernel(f.options, r, c, dtype, seed++);
                const int64_t tolerance = std::string(dtype) == "fp32" ? 0 : 1;
                const bool passed = k.kernelRan && k.maxUlp <= tolerance &&
                                    k.cpuMaxUlp <= tolerance &&
                                    (tolerance > 0 || k.maxAbsDiff == 0.0) &&
                                    k.absmaxMaxUlp == (f.options.doubleQuant ? 0 : -1);
                ok = ok && passed;
                rows.push_back({{"format", f.name},
                                {"dtype", dtype},
                                {"rows", r},
                                {"cols", c},
                                {"kernel_ran", k.kernelRan},
                                {"max_ulp", k.maxUlp},
                                {"cpu_max_ulp", k.cpuMaxUlp},
                                {"absmax_max_ulp", k.absmaxMaxUlp},
                                {"max_abs_diff", k.maxAbsDiff},
                                {"passed", passed}});
            }
    return rows;
}

json timings(int64_t rows, int64_t cols, int repeats)
{
    json out = json::array();
    for (const Format& f : formats())
        for (const char* dtype : {"bf16", "fp16", "fp32"}) {
            const KernelTiming t = timeDequantKernel(f.options, rows, cols, dtype, repeats);
            out.push_back({{"format", f.name},
                           {"dtype", dtype},
                           {"rows", rows},
                           {"cols", cols},
                           {"kernel_ran", t.kernelRan},
                           {"kernel_us", t.kernelSeconds * 1e6},
                           {"libtorch_us", t.torchSeconds * 1e6},
                           {"speedup", t.kernelRan ? t.torchSeconds / t.kernelSeconds : 0.0},
                           {"kernel_gb_per_s",
                            t.kernelRan ? double(t.bytesMoved) / t.kernelSeconds / 1e9 : 0.0}});
        }
    return out;
}

}  // namespace

int cmdBenchDequant(const Args& args, std::ostream& out)
{
    args.allowOnly({"rows", "cols", "repeats", "json"});
    // Llama-3.1-8B's MLP projection ([14336, 4096], the largest linear of a layer) by default.
    const int64_t rows = args.integer("rows", 14336);
    const int64_t cols = args.integer("cols", 4096);
    const int repeats = static_cast<int>(args.integer("repeats", 5));
    if (rows <= 0 || cols <= 0 || repeats <= 0)
        fail("bench dequant: --rows, --cols and --repeats must be positive");
    if (!quantCudaAvailable())
        fail("bench dequant: no CUDA device (the kernels of kernels/ run on CUDA only)");
    bool ok = quantKernelsBuilt();
    json result = {{"kernels_built", quantKernelsBuilt()}};
    result["checks"] = checks(ok);
    result["timings"] = timings(rows, cols, repeats);
    result["ok"] = ok;
    if (args.flag("json")) {
        out << result.dump() << "\n";
        return ok ? 0 : 1;
    }
    if (!quantKernelsBuilt())
        out << "this build has no CUDA kernels (configure with -DTB_CUDA_KERNELS=ON); LibTorch "
               "path only\n";
    int failed = 0;
    for (const auto& c : result["checks"])
        if (!c["passed"].get<bool>())
            ++failed;
    out << result["checks"].size() << " checks against the LibTorch path, " << failed
        << " failed\n";
    char line[256];
    for (const auto& t : result["timings"]) {
        std::snprintf(line, sizeof line,
                      "%-7s -> %-4s [%lld, %lld]: kernel %8.1f us (%6.0f GB/s), LibTorch %8.1f us, "
                      "%.1fx\n",
                      t["format"].get<std::string>().c_str(), t["dtype"].get<std::string>().c_str(),
                      static_cast<long long>(rows), static_cast<long long>(cols),
                      t["kernel_us"].get<double>(), t["kernel_gb_per_s"].get<double>(),
                      t["libtorch_us"].get<double>(), t["speedup"].get<double>());
        out << line;
    }
    return ok ? 0 : 1;
}

}  // namespace tb
