// A combo box choosing how a base model's linear weights are held for a side-by-side look (off,
// NF4 with double quantisation, NF4, FP4, int8): the Playground's third column and the Evaluate
// page's extra base. Plain widgets over core's torch-free quant_format.h.
#pragma once

#include "quant/quant_format.h"

#include <QString>

class QComboBox;

namespace tb {

void fillQuantChoice(QComboBox* box, const QString& offLabel);
QuantOptions quantChoice(const QComboBox* box);  // kind None when off

}  // namespace tb
