// `tunebench export`: a run as a PEFT adapter, a merged Hugging Face folder or GGUF.
#include "cli/commands.h"

#include "export/export.h"
#include "util/error.h"
#include <nlohmann/json.hpp>

namespace tb {

using nlohmann::json;

int cmdExport(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly({"run", "format", "out", "force", "json", "dtype"});
    ExportOptions o;
    o.format = args.value("format");
    o.outDir = args.value("out");
    o.force = args.flag("force");
    if (args.has("dtype")) {
        if (!o.format.starts_with("gguf"))
            fail("export: --dtype applies to the GGUF formats only");
        o.dtype = args.value("dtype");
    }
    ExportReport r = exportRun(args.value("run"), o);
    if (args.flag("json")) {
        json j{{"out", r.outDir},  {"format", r.format},   {"checkpoint", r.checkpoint},
               {"files", r.files}, {"tensors", r.tensors}, {"max_abs_change", r.maxAbsChange}};
        if (r.format.starts_with("gguf")) {
            j["dtype"] = o.dtype;
            j["bytes"] = r.bytes;
            j["warnings"] = r.warnings;
            if (r.lossTokens > 0)
                j["quantization"] = {{"loss_fp32", r.lossFp32},
                                     {"loss_q8_0", r.lossQuantized},
                                     {"tokens", r.lossTokens}};
        }
        if (!r.quant.empty()) {
            j["quant"] = r.quant;
            j["notes"] = r.notes;
            if (r.quantLossTokens > 0)
                j["quantized_base"] = {{"loss_adapter_on_quantized", r.lossAdapterQuantized},
                                       {"loss_merged", r.lossMerged},
                                       {"loss_adapter_on_original", r.lossAdapterOriginal},
                                       {"logits_max_abs_diff", r.logitsMaxDiff},
                                       {"tokens", r.quantLossTokens}};
        }
        out << j.dump() << "\n";
        return 0;
    }
    for (const std::string& w : r.warnings)
        err << "note: " << w << "\n";
    for (const std::string& n : r.notes)
        err << "note: " << n << "\n";
    if (r.quantLossTokens > 0)
        out << "merging the " << r.quant << " base: loss " << r.lossAdapterQuantized
            << " (adapter on the " << r.quant << " base) -> " << r.lossMerged << " (merged) on "
            << r.quantLossTokens << " validation tokens (largest logit difference "
            << r.logitsMaxDiff
            << "); the adapter on the original base (PEFT): " << r.lossAdapterOriginal << "\n";
    out << "exported " << r.checkpoint << " as " << r.format << " to " << r.outDir << " ("
        << r.tensors << " tensors";
    if (r.format.starts_with("gguf"))
        out << ", " << o.dtype << ", " << r.bytes << " bytes";
    out << ")\n";
    if (r.lossTokens > 0)
        out << "Q8_0 costs: loss " << r.lossFp32 << " (fp32) -> " << r.lossQuantized
            << " (Q8_0) on " << r.lossTokens << " validation tokens\n";
    if (r.format == "gguf-lora")
        out << "use it with the run's base model: tunebench export --run " << args.value("run")
            << " --format gguf-base --out base.gguf; llama-cli -m base.gguf --lora " << r.outDir
            << "\n";
    return 0;
}

}  // namespace tb
