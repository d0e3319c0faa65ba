// Desktop integration: the compiled-in application icon, `tunebench-studio FILE` opening a project
// or a dataset store (MainWindow::openPath), and the .desktop, AppStream and MIME files passing
// their validators.
#include "data_page.h"
#include "data_page_util.h"
#include "main_window.h"
#include "studio_state.h"
#include "test_util.h"

#include "data/store/store.h"

#include <QApplication>
#include <QFile>
#include <QIcon>
#include <QImage>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

namespace {

const QString kSource = QStringLiteral(TB_SOURCE_DIR);

// Runs a validator on `file`; empty when it passed, else its output (or why it could not run).
QString runValidator(const QString& program, const QStringList& args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, args);
    if (!p.waitForFinished(60000))
        return program + QStringLiteral(" did not finish");
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        return QString::fromUtf8(p.readAll());
    return {};
}

QString readText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

}  // namespace

class TestDesktopIntegration : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
    }
    void iconIsCompiledIn()
    {
        const QIcon icon = tb::appIcon();
        const QList<QSize> sizes = icon.availableSizes();
        QCOMPARE(sizes.size(), 8);
        for (int s : {16, 22, 24, 32, 48, 64, 128, 256})
            QVERIFY2(sizes.contains(QSize(s, s)), qPrintable(QString::number(s)));
        // The compiled-in 256 px picture is the committed rendering, pixel for pixel (both
        // premultiplied, as a pixmap holds them).
        const auto fmt = QImage::Format_ARGB32_Premultiplied;
        const QImage committed =
            QImage(kSource + QStringLiteral("/resources/icons/tunebench-256.png"))
                .convertToFormat(fmt);
        QCOMPARE(committed.size(), QSize(256, 256));
        QCOMPARE(QImage(QStringLiteral(":/tunebench/icons/tunebench-256.png")).convertToFormat(fmt),
                 committed);
        QCOMPARE(icon.pixmap(256, 256).toImage().convertToFormat(fmt), committed);
        // Not a blank picture: the centre (the fork's stem) is opaque, the corner (outside the
        // rounded square) transparent.
        QCOMPARE(qAlpha(committed.pixel(128, 160)), 255);
        QCOMPARE(qAlpha(committed.pixel(0, 0)), 0);
    }
    void windowAndAboutBoxUseIcon()
    {
        tb::MainWindow w;
        QVERIFY(!w.windowIcon().isNull());
        QVERIFY(w.windowIcon().availableSizes().contains(QSize(48, 48)));
        std::unique_ptr<QMessageBox> box(w.createAboutBox());
        const QPixmap pixmap = box->iconPixmap();
        QCOMPARE(pixmap.size(), QSize(64, 64));
        QCOMPARE(pixmap.toImage().convertToFormat(QImage::Format_ARGB32),
                 tb::appIcon().pixmap(64, 64).toImage().convertToFormat(QImage::Format_ARGB32));
        QVERIFY(box->text().contains(QStringLiteral("Tunebench Studio")));
    }
    void startupFileKinds()
    {
        QCOMPARE(tb::startupFileKind(QStringLiteral("/a/b/run.tunebench")),
                 tb::StartupFile::Project);
        QCOMPARE(tb::startupFileKind(QStringLiteral("notes.TBSTORE")), tb::StartupFile::Store);
        QCOMPARE(tb::startupFileKind(QStringLiteral("/models/stories260k")),
                 tb::StartupFile::Model);
        QCOMPARE(tb::startupFileKind(QStringLiteral("tunebench")), tb::StartupFile::Model);
    }
    void opensStoreOnDataPage()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("mine.tbstore"));
        {
            tb::MainWindow maker;
            QString error;
            QVERIFY2(tbtest::openStoreAndWait(*maker.dataPage(), path, true, &error),
                     qPrintable(error));
        }
        QVERIFY(QFile::exists(path));
        tb::MainWindow w;
        w.show();
        QSignalSpy opened(w.dataPage(), &tb::DataPage::storeOpened);
        QString error;
        QVERIFY2(w.openPath(path, &error), qPrintable(error));
        QCOMPARE(w.findChild<QListWidget*>()->currentRow(), 1);  // the Data page, while it opens
        QVERIFY(opened.wait(30000));
        QVERIFY(w.dataPage()->store());
        QCOMPARE(QString::fromStdString(w.dataPage()->store()->path()), path);
        QCOMPARE(w.state()->storePath(), path);
    }
    // A file named .tbstore that is not a store: openPath starts, the failure names the file, and
    // the page keeps no store.
    void brokenStoreIsReported()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("broken.tbstore"));
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray(4096, 'x'));
        }
        tb::MainWindow w;
        QSignalSpy failed(w.dataPage(), &tb::DataPage::storeFailed);
        QString error;
        QVERIFY2(w.openPath(path, &error), qPrintable(error));
        QVERIFY(failed.wait(30000));
        const QString message = failed.first().at(0).toString();
        QVERIFY2(message.contains(path), qPrintable(message));
        QVERIFY(!w.dataPage()->store());
        QVERIFY(!w.dataPage()->opening());
        QCOMPARE(QFileInfo(path).size(), qint64(4096));  // left as it was
    }
    void missingStoreIsReported()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("absent.tbstore"));
        tb::MainWindow w;
        QString error;
        QVERIFY(!w.openPath(path, &error));
        QVERIFY2(error.contains(path), qPrintable(error));
        QVERIFY(!QFile::exists(path));  // opening never creates a store
        QVERIFY(!w.dataPage()->store());
    }
    void opensProject()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("p.tunebench"));
        const QString store = dir.filePath(QStringLiteral("s.tbstore"));
        {
            tb::MainWindow maker;
            maker.state()->setStorePath(store);
            QString error;
            QVERIFY2(maker.saveProject(path, &error), qPrintable(error));
        }
        tb::MainWindow w;
        QString error;
        QVERIFY2(w.openPath(path, &error), qPrintable(error));
        QCOMPARE(w.projectPath(), path);
        QCOMPARE(w.state()->storePath(), store);
        QVERIFY(w.windowTitle().startsWith(QStringLiteral("p.tunebench")));
        tb::MainWindow broken;
        QFile(dir.filePath(QStringLiteral("bad.tunebench"))).open(QIODevice::WriteOnly);
        QVERIFY(!broken.openPath(dir.filePath(QStringLiteral("bad.tunebench")), &error));
        QVERIFY(!error.isEmpty());
        QVERIFY(broken.projectPath().isEmpty());
    }
    void desktopFileValidates()
    {
        const QString file = kSource + QStringLiteral("/packaging/tunebench-studio.desktop");
        const QString text = readText(file);
        QVERIFY(text.contains(QStringLiteral("\nIcon=tunebench-studio\n")));
        QVERIFY(text.contains(QStringLiteral(
            "MimeType=application/x-tunebench-project;application/x-tunebench-store;")));
        const QString tool =
            QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
        if (tool.isEmpty())
            QSKIP(
                "desktop-file-validate not installed (Debian: desktop-file-utils); not validated");
        const QString out = runValidator(tool, {file});
        QVERIFY2(out.isEmpty(), qPrintable(out));
    }
    void metainfoValidates()
    {
        const QString tool = QStandardPaths::findExecutable(QStringLiteral("appstreamcli"));
        if (tool.isEmpty())
            QSKIP("appstreamcli not installed (Debian: appstream); metainfo not validated");
        const QString file =
            kSource + QStringLiteral("/packaging/org.tunebench.Studio.metainfo.xml");
        const QString out =
            runValidator(tool, {QStringLiteral("validate"), QStringLiteral("--no-net"), file});
        QVERIFY2(out.isEmpty(), qPrintable(out));
    }
    void mimeTypesRegister()
    {
        const QString tool = QStandardPaths::findExecutable(QStringLiteral("update-mime-database"));
        if (tool.isEmpty())
            QSKIP("update-mime-database not installed (Debian: shared-mime-info); MIME XML not "
                  "checked");
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("packages")));
        QVERIFY(QFile::copy(kSource + QStringLiteral("/packaging/tunebench-mime.xml"),
                            dir.filePath(QStringLiteral("packages/tunebench.xml"))));
        const QString out = runValidator(tool, {dir.path()});
        QVERIFY2(out.isEmpty(), qPrintable(out));
        const QString globs = readText(dir.filePath(QStringLiteral("globs2")));
        QVERIFY2(globs.contains(QStringLiteral(":application/x-tunebench-project:*.tunebench")),
                 qPrintable(globs));
        QVERIFY2(globs.contains(QStringLiteral(":application/x-tunebench-store:*.tbstore")),
                 qPrintable(globs));
    }
};

QTEST_MAIN(TestDesktopIntegration)
#include "test_desktop_integration.moc"
