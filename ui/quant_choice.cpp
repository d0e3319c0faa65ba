// The quantised-base choice: items carry the format's name and whether it quantises twice.
#include "quant_choice.h"

#include <QComboBox>

#include <utility>

namespace tb {

void fillQuantChoice(QComboBox* box, const QString& offLabel)
{
    box->addItem(offLabel, QStringLiteral("none"));
    box->setItemData(0, false, Qt::UserRole + 1);
    const std::pair<QuantKind, bool> formats[] = {{QuantKind::Nf4, true},
                                                  {QuantKind::Nf4, false},
                                                  {QuantKind::Fp4, false},
                                                  {QuantKind::Int8, false}};
    for (const auto& [kind, twice] : formats) {
        QuantOptions q;
        q.kind = kind;
        q.doubleQuant = twice;
        box->addItem(QString::fromStdString(quantDescription(q)),
                     QString::fromLatin1(quantKindName(kind)));
        box->setItemData(box->count() - 1, twice, Qt::UserRole + 1);
    }
}

QuantOptions quantChoice(const QComboBox* box)
{
    QuantOptions q;
    q.kind = parseQuantKind(box->currentData().toString().toStdString()).value_or(QuantKind::None);
    q.doubleQuant = box->currentData(Qt::UserRole + 1).toBool();
    return q;
}

}  // namespace tb
