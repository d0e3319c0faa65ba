// ScreenshotTour: drives the studio through every page in a realistic state (a run in progress, an
// export, a generation, reviewed records) through the pages' public API, and saves a picture of
// each (docs).
#pragma once

#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <functional>
#include <memory>

namespace tb {

class DataPage;
class MainWindow;

class ScreenshotTour : public QObject {
public:
    // Writes `dir`/{model,data,method,memory,train,memory-measured,export,playground,evaluate}.png,
    // then quits the application (exit 1 when a picture failed).
    ScreenshotTour(MainWindow* window, QString dir, QObject* parent = nullptr);

    // Call before the model is opened: the tour starts when the Model page reports it open.
    void begin();

private:
    template <class Sender, class Signal, class F> void once(Sender* sender, Signal signal, F f)
    {
        auto conn = std::make_shared<QMetaObject::Connection>();
        *conn = QObject::connect(sender, signal, this, [conn, f] {
            QObject::disconnect(*conn);
            f();
        });
    }
    void later(std::function<void()> f, int ms = 300);
    void shot(const QString& page, const QString& file);
    void modelShot();
    void dataShot();
    void reviewAndStats(DataPage* page);
    void methodShot();
    void trainShot();
    void memoryAfterRun();
    void exportShot();
    void playgroundShot();
    void evaluateShot();
    void fail(const char* why);

    MainWindow* m_window;
    QString m_dir;
    QTemporaryDir m_runs;
    bool m_ok = true;
};

// --screenshot FILE: saves the window to `file` once the model is open, then quits (exit 1 on
// failure).
void saveWindowWhenOpen(MainWindow* window, const QString& file);

}  // namespace tb
