// ImportDialog: picks a file, previews its first rows as core imports them (detected format,
// records, rejected lines), maps CSV columns to fields, then imports into the store on a worker
// thread (its own DataStore connection) with progress and cancel, streamed back through an
// EventBuffer, and lists every rejected row with its line and reason.
#pragma once

#include "data/ingest/import.h"
#include "event_buffer.h"

#include <QDialog>
#include <QFutureWatcher>

#include <atomic>
#include <memory>
#include <optional>
#include <utility>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace tb {

// The first rows of a file as core would import them (read from a copy of its first lines).
struct ImportPreview {
    QString error;        // a whole-file problem (then nothing else is set)
    QString format;       // detected (or chosen) format name
    QStringList columns;  // CSV header
    std::vector<ImportedRecord> records;
    std::vector<ImportRejection> rejected;
};
ImportPreview previewImport(const QString& path, const ImportOptions& options, int maxLines = 50);

struct ImportOutcome {
    QString error;  // the import failed or was cancelled: nothing was written
    QString format;
    qint64 imported = 0;
    std::vector<ImportRejection> rejected;
    qint64 operationId = 0;
};

class ImportDialog : public QDialog {
    Q_OBJECT
public:
    // modelDir: the tokenizer for documents (.txt/.md are chunked by its tokens).
    ImportDialog(const QString& storePath, const QString& who, const QString& modelDir,
                 QWidget* parent = nullptr);
    ~ImportDialog() override;

    void setFile(const QString& path);    // and previews it
    void setSplit(const QString& split);  // train | validation | general
    void setColumn(const QString& field,
                   const QString& header);  // CSV mapping; empty header: by name
    ImportOptions options() const;
    bool startImport();  // false when an import runs or no file is set
    void cancelImport();
    bool running() const { return m_running; }

    const ImportPreview& preview() const { return m_preview; }
    const ImportOutcome& outcome() const { return m_outcome; }
    QTableWidget* previewTable() const { return m_previewTable; }
    QTableWidget* rejectionTable() const { return m_rejections; }
    QLabel* summaryLabel() const { return m_summary; }
    QProgressBar* progressBar() const { return m_progress; }
    int eventDrains() const { return m_events.drains(); }  // batches the import was reported in

Q_SIGNALS:
    void previewReady();
    void imported(const tb::ImportOutcome& outcome);  // after success, failure or cancel

private:
    void refreshPreview();
    void showPreview();
    void showOutcome();
    void setRejections(const std::vector<ImportRejection>& rows);

    QString m_storePath, m_who, m_modelDir;
    QString m_previewedFile;
    QLineEdit* m_file = nullptr;
    QComboBox* m_format = nullptr;
    QComboBox* m_split = nullptr;
    QLabel* m_detected = nullptr;
    QWidget* m_mappingBox = nullptr;
    std::vector<std::pair<QString, QComboBox*>> m_mapping;  // field -> header combo
    QTableWidget* m_previewTable = nullptr;
    QTableWidget* m_rejections = nullptr;
    QLabel* m_summary = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_import = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_close = nullptr;
    QFutureWatcher<ImportPreview> m_previewWatcher;
    // What the import worker reported since the last drain: the newest progress, and its outcome.
    struct ImportEvents {
        std::optional<std::pair<qint64, qint64>> progress;  // bytes done, bytes in all
        std::optional<ImportOutcome> outcome;
    };
    void onImportEvents(ImportEvents&& events);
    EventBuffer<ImportEvents> m_events;
    QFuture<void> m_importWorker;
    ImportPreview m_preview;
    ImportOutcome m_outcome;
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;
    bool m_running = false;
    bool m_previewAgain = false;
};

}  // namespace tb

Q_DECLARE_METATYPE(tb::ImportOutcome)
