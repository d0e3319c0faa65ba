// What the Memory page's bars are made of: core's estimate items grouped into stacked components
// (keys, titles, colours), the method labels of the bars, and the device-memory presets.
#pragma once

#include "memory/estimator.h"

#include <QColor>
#include <QString>

#include <utility>
#include <vector>

namespace tb {

// weights, gradients, optimizer_states, master_weights, activations, logits, overhead, and
// "other": every item core itemises beyond those (a preference objective's reference model,
// log-probabilities, a reward model's head), stacked as one component.
constexpr int kComponentCount = 8;
const char* componentKey(int component);
QString componentTitle(int component);  // "Weights", ..., "Objective's own"
QColor componentColor(int component);
// Bytes per component of an estimate's items.
std::vector<double> componentBytes(const MemoryEstimate& estimate);

// "Full", "Partial", "LoRA" ("QLoRA nf4" on a quantised base), "Adapter", "Prompt".
QString methodLabel(Method method, const QuantOptions& quant = {});

// "None", "8 GB" ... "141 GB" device presets and this machine's physical memory, bytes.
std::vector<std::pair<QString, qint64>> deviceMemoryPresets();

}  // namespace tb
