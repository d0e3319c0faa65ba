// Operator profile from LibTorch's Kineto profiler. Kineto reports each operator with its start and
// end on its thread; an operator's self time is its duration less that of the operators nested
// directly inside it on the same thread.
#include "cli/op_profile.h"

#include "util/error.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <map>

namespace tb {
namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerState;

prof::ProfilerConfig profileConfig()
{
    return prof::ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/true,
                                /*profile_memory=*/false);
}

struct Span {
    uint64_t start = 0, end = 0;
    std::string name;
};

}  // namespace

void startOpProfile()
{
    if (prof::profilerEnabled())
        fail("bench: a profile is running already");
    const std::set<ActivityType> activities{ActivityType::CPU};
    prof::prepareProfiler(profileConfig(), activities);
    prof::enableProfiler(profileConfig(), activities);
}

std::vector<OpTime> stopOpProfile(int per)
{
    const auto result = prof::disableProfiler();
    std::map<uint64_t, std::vector<Span>> byThread;
    for (const auto& e : result->events()) {
        if (e.deviceType() != c10::DeviceType::CPU || e.isAsync() || e.endNs() <= e.startNs())
            continue;
        std::string name = e.name();
        // Matrix products by their operands' shapes, copies by destination and source: which of
        // them runs slow is what a profile of training wants to know.
        if ((name == "aten::mm" || name == "aten::addmm" || name == "aten::copy_" ||
             name == "aten::mul") &&
            e.hasShapes()) {
            std::string shapes;
            for (const auto& shape : e.shapes()) {
                if (shape.empty())
                    continue;
                shapes += shapes.empty() ? " " : (name == "aten::copy_" ? " <- " : " x ");
                for (size_t d = 0; d < shape.size(); ++d)
                    shapes += (d ? "x" : "") + std::to_string(shape[d]);
            }
            name += shapes;
        }
        byThread[e.startThreadId()].push_back({e.startNs(), e.endNs(), name});
    }
    std::map<std::string, OpTime> totals;
    for (auto& [thread, spans] : byThread) {
        // Parents first: by start, the longer span first where two start together.
        std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
            return a.start != b.start ? a.start < b.start : a.end > b.end;
        });
        std::vector<double> self(spans.size());
        std::vector<size_t> open;  // indices of the spans enclosing the current one
        for (size_t i = 0; i < spans.size(); ++i) {
            const Span& s = spans[i];
            while (!open.empty() && spans[open.back()].end <= s.start)
                open.pop_back();
            self[i] = static_cast<double>(s.end - s.start) * 1e-9;
            if (!open.empty())
                self[open.back()] -=
                    static_cast<double>(std::min(s.end, spans[open.back()].end) - s.start) * 1e-9;
            open.push_back(i);
        }
        for (size_t i = 0; i < spans.size(); ++i) {
            auto& t = totals[spans[i].name];
            t.name = spans[i].name;
            t.selfSeconds += self[i];
            ++t.calls;
        }
    }
    std::vector<OpTime> out;
    const int n = std::max(per, 1);
    for (auto& [name, t] : totals) {
        t.selfSeconds /= n;
        t.calls /= n;
        out.push_back(t);
    }
    std::sort(out.begin(), out.end(),
              [](const OpTime& a, const OpTime& b) { return a.selfSeconds > b.selfSeconds; });
    return out;
}

}  // namespace tb
