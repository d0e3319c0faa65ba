// RecordEditor: a form of QPlainTextEdits rebuilt per record; JSON fields are validated before any
// write.
#include "record_editor.h"

#include "record_table_model.h"

#include "util/error.h"
#include "util/json_depth.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <exception>

namespace tb {

RecordEditor::RecordEditor(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(tr("No record selected"), this);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_meta = new QLabel(this);
    m_meta->setWordWrap(true);
    m_meta->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_labels = new QLabel(this);
    m_labels->setWordWrap(true);
    layout->addWidget(m_title);
    layout->addWidget(m_meta);
    layout->addWidget(m_labels);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    m_fieldsBox = new QWidget(scroll);
    m_form = new QFormLayout(m_fieldsBox);
    m_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    scroll->setWidget(m_fieldsBox);
    layout->addWidget(scroll, 1);
    auto* buttons = new QHBoxLayout();
    m_save = new QPushButton(tr("Save edits"), this);
    m_save->setToolTip(
        tr("Writes each changed field to the store's history under your annotator name"));
    m_revert = new QPushButton(tr("Revert"), this);
    buttons->addStretch(1);
    buttons->addWidget(m_revert);
    buttons->addWidget(m_save);
    layout->addLayout(buttons);
    m_save->setEnabled(false);
    m_revert->setEnabled(false);
    connect(m_save, &QPushButton::clicked, this, &RecordEditor::saveRequested);
    connect(m_revert, &QPushButton::clicked, this, &RecordEditor::revert);
}

void RecordEditor::revert()
{
    for (Field& f : m_fields)
        if (f.edit->toPlainText() != f.original)
            f.edit->setPlainText(f.original);
}

void RecordEditor::clearFields()
{
    while (m_form->rowCount() > 0)
        m_form->removeRow(0);
    m_fields.clear();
}

void RecordEditor::showRecord(const std::optional<StoredRecord>& record, const DataStore* store)
{
    clearFields();
    m_record = record;
    m_save->setEnabled(false);
    m_revert->setEnabled(false);
    if (!record) {
        m_title->setText(tr("No record selected"));
        m_meta->clear();
        m_labels->clear();
        return;
    }
    const StoredRecord& r = *record;
    m_title->setText(tr("Record %1 — %2").arg(r.id).arg(QString::fromStdString(r.kind)));
    QStringList meta;
    const QColor c = RecordTableModel::statusColor(r.status);
    meta << tr("Status: <b style=\"color:%1\">%2</b>")
                .arg(c.isValid() ? c.name() : palette().color(QPalette::WindowText).name(),
                     QString::fromLatin1(reviewStatusName(r.status)));
    meta << tr("split %1").arg(QString::fromStdString(r.split));
    meta << (r.tokenCount >= 0 ? tr("%1 tokens").arg(r.tokenCount) : tr("tokens not counted"));
    if (r.synthetic)
        meta << tr("synthetic");
    if (!r.sourcePath.empty()) {
        QString where = QString::fromStdString(r.sourcePath).section(QLatin1Char('/'), -1);
        if (r.sourceLine > 0)
            where += QStringLiteral(":%1").arg(r.sourceLine);
        if (r.chunkIndex >= 0)
            where += tr(" chunk %1").arg(r.chunkIndex);
        meta << tr("from %1").arg(where.toHtmlEscaped());
    }
    m_meta->setText(meta.join(QStringLiteral(" · ")));
    QStringList labels;
    if (store) {
        try {
            for (const AnnotatorLabel& l : store->labels(r.id)) {
                QString s =
                    QString::fromStdString(l.annotator).toHtmlEscaped() + QStringLiteral(": ");
                s += l.decision.empty() ? tr("(no decision)") : QString::fromStdString(l.decision);
                if (l.rating)
                    s += tr(", rated %1").arg(*l.rating);
                labels << s;
            }
            for (const ScanFlag& f : store->scanFlags(r.id))
                labels << tr("<span style=\"color:#c0392b\">flag %1 in %2: %3</span>")
                              .arg(QString::fromStdString(f.kind), QString::fromStdString(f.field),
                                   QString::fromStdString(f.masked).toHtmlEscaped());
        } catch (const std::exception& e) {
            labels << QString::fromUtf8(e.what()).toHtmlEscaped();
        }
    }
    m_labels->setText(labels.isEmpty() ? tr("No labels yet") : labels.join(QStringLiteral("<br>")));
    for (auto it = r.fields.begin(); it != r.fields.end(); ++it) {
        Field f;
        f.name = QString::fromStdString(it.key());
        f.json = !it.value().is_string();
        f.original = f.json ? QString::fromStdString(it.value().dump(2))
                            : QString::fromStdString(it.value().get<std::string>());
        f.edit = new QPlainTextEdit(m_fieldsBox);
        f.edit->setObjectName(QStringLiteral("field_") + f.name);
        f.edit->setPlainText(f.original);
        f.edit->setTabChangesFocus(true);
        const int lines = qBound(
            2, int(f.original.count(QLatin1Char('\n'))) + 1 + int(f.original.size() / 80), 10);
        f.edit->setMinimumHeight(f.edit->fontMetrics().lineSpacing() * lines + 12);
        connect(f.edit, &QPlainTextEdit::textChanged, this, [this] {
            const bool m = modified();
            m_save->setEnabled(m && m_saveEnabled);
            m_revert->setEnabled(m);
            Q_EMIT modifiedChanged(m);
        });
        m_form->addRow(f.json ? tr("%1 (JSON)").arg(f.name) : f.name, f.edit);
        m_fields.push_back(f);
    }
}

std::optional<int64_t> RecordEditor::recordId() const
{
    return m_record ? std::optional<int64_t>(m_record->id) : std::nullopt;
}

bool RecordEditor::modified() const
{
    for (const Field& f : m_fields)
        if (f.edit->toPlainText() != f.original)
            return true;
    return false;
}

QStringList RecordEditor::save(DataStore& store, const std::string& who)
{
    if (!m_record)
        return {};
    // Parse every JSON field first, so a bad one writes nothing.
    std::vector<DataStore::Change> changes;
    for (const Field& f : m_fields) {
        const QString text = f.edit->toPlainText();
        if (text == f.original)
            continue;
        nlohmann::json value;
        if (f.json) {
            checkJsonDepth(text.toStdString(), "field " + f.name.toStdString());
            try {
                value = nlohmann::json::parse(text.toStdString());
            } catch (const nlohmann::json::exception& e) {
                fail("field \"", f.name.toStdString(), "\" is not valid JSON: ", e.what());
            }
        } else {
            value = text.toStdString();
        }
        if (f.name.isEmpty())
            fail(store.path(), ": record ", m_record->id, ": empty field name");
        changes.push_back({m_record->id, "fields." + f.name.toStdString(), std::move(value)});
    }
    if (changes.empty())
        return {};
    // One operation for all of them: they are written together or not at all, and Undo last
    // reverses the whole Save.
    QStringList written;
    nlohmann::json names = nlohmann::json::array();
    for (const DataStore::Change& c : changes) {
        const std::string name = c.field.substr(std::string("fields.").size());
        names.push_back(name);
        written << QString::fromStdString(name);
    }
    nlohmann::json params = {{"record_id", m_record->id}};
    if (names.size() == 1)
        params["field"] = names[0];  // as `data edit` records one field
    else
        params["fields"] = names;
    store.applyOperation("edit", who, params, nlohmann::json::object(), changes);
    return written;
}

void RecordEditor::focusFirstField()
{
    if (!m_fields.empty())
        m_fields.front().edit->setFocus(Qt::ShortcutFocusReason);
}

QPlainTextEdit* RecordEditor::fieldEditor(const QString& field) const
{
    for (const Field& f : m_fields)
        if (f.name == field)
            return f.edit;
    return nullptr;
}

void RecordEditor::setSaveEnabled(bool enabled)
{
    m_saveEnabled = enabled;
    m_save->setEnabled(enabled && modified());
}

}  // namespace tb
