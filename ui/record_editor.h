// RecordEditor: one record in detail: where it came from, its review labels and scan flags, and its
// fields as editable text areas (text fields as text, others as JSON); saving writes one history
// entry per changed field through DataStore::editField.
#pragma once

#include "data/store/store.h"

#include <QWidget>

#include <optional>
#include <vector>

class QFormLayout;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace tb {

class RecordEditor : public QWidget {
    Q_OBJECT
public:
    explicit RecordEditor(QWidget* parent = nullptr);

    // Shows a record with its labels and flags as read from `store` (nullopt: nothing selected).
    void showRecord(const std::optional<StoredRecord>& record, const DataStore* store);
    std::optional<int64_t> recordId() const;
    bool modified() const;
    // Writes every changed field as `who`; returns the names of the fields written, or throws
    // tb::Error (a field that must be JSON and does not parse names the field).
    QStringList save(DataStore& store, const std::string& who);
    void focusFirstField();
    QPlainTextEdit* fieldEditor(const QString& field) const;
    void setSaveEnabled(bool enabled);
    void revert();  // the fields as stored (what Revert does)

Q_SIGNALS:
    void saveRequested();
    void modifiedChanged(bool modified);

private:
    struct Field {
        QString name;
        bool json = false;  // not a string: edited as JSON text
        QString original;
        QPlainTextEdit* edit = nullptr;
    };
    void clearFields();

    std::optional<StoredRecord> m_record;
    QLabel* m_title = nullptr;
    QLabel* m_meta = nullptr;
    QLabel* m_labels = nullptr;
    QWidget* m_fieldsBox = nullptr;
    QFormLayout* m_form = nullptr;
    std::vector<Field> m_fields;
    QPushButton* m_save = nullptr;
    QPushButton* m_revert = nullptr;
    bool m_saveEnabled = true;
};

}  // namespace tb
