// ClusterCanvas and GpuPalette: one item per group, items follow document signals, drops add
// groups (undoable), shift-drag connects, Delete removes; the catalogue model passes
// QAbstractItemModelTester.
#include "memx/io/formats.h"
#include "memx/ui/clustercanvas.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/documentstorage.h"
#include "memx/ui/gpucataloguemodel.h"
#include "memx/ui/gpupalette.h"
#include "memx/ui/nodegroupitem.h"
#include "memx/ui/vendorstyle.h"

#include <QAbstractItemModelTester>
#include <QGraphicsScene>
#include <QLineEdit>
#include <QMimeData>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTest>
#include <QTreeView>
#include <QUndoStack>

using namespace memx::ui;

class TestClusterCanvas : public QObject {
    Q_OBJECT

private:
    static void open(ClusterDocument &doc, const char *name = "paper-20gpu-nvidia-amd.json")
    {
        doc.reset({}, memx::resolveModel("llama2-7b"));
        doc.load(QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters/") + name, ClusterJsonStorage());
    }
    static QPoint viewPoint(ClusterCanvas &canvas, QPointF scene) { return canvas.mapFromScene(scene); }

private slots:
    void oneItemPerGroup()
    {
        ClusterDocument doc;
        ClusterCanvas canvas(&doc);
        QCOMPARE(canvas.nodeItemCount(), 0);
        open(doc, "paper-20gpu-mixed-consumer.json");
        QCOMPARE(canvas.nodeItemCount(), int(doc.cluster().groups.size()));
        // Every override in that sample connects two different groups: each gets a line.
        QCOMPARE(canvas.linkItemCount(), int(doc.cluster().network.overrides.size()));
        for (int i = 0; i < canvas.nodeItemCount(); ++i) {
            QCOMPARE(canvas.nodeItem(i)->index(), i);
            QCOMPARE(canvas.nodeItem(i)->pos(),
                     QPointF(doc.cluster().groups[size_t(i)].x, doc.cluster().groups[size_t(i)].y));
        }
    }

    void followsDocumentSignals()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        QCOMPARE(canvas.nodeItemCount(), 3);
        QVERIFY(doc.addNodeGroup("mi300x", QPointF(0, 300)) == 3);
        QCOMPARE(canvas.nodeItemCount(), 4);
        QCOMPARE(canvas.nodeItem(3)->pos(), QPointF(0, 300));
        doc.moveNodeGroups({3}, {QPointF(40, 500)});
        QCOMPARE(canvas.nodeItem(3)->pos(), QPointF(40, 500));
        doc.undoStack()->undo();
        QCOMPARE(canvas.nodeItem(3)->pos(), QPointF(0, 300));
        doc.removeNodeGroups({0});
        QCOMPARE(canvas.nodeItemCount(), 3);
        for (int i = 0; i < 3; ++i) // indices renumbered after the removal
            QCOMPARE(canvas.nodeItem(i)->index(), i);
        QCOMPARE(canvas.nodeItem(0)->pos(), QPointF(260, 0)); // mi250x moved up to index 0
        QVERIFY(doc.addLinkOverride("mi250x", "h100", {100, 2, {}}) >= 0);
        QCOMPARE(canvas.linkItemCount(), 1);
        doc.undoStack()->undo();
        QCOMPARE(canvas.linkItemCount(), 0);
        doc.undoStack()->undo();
        doc.undoStack()->undo();
        QCOMPARE(canvas.nodeItemCount(), 3);
        QCOMPARE(canvas.nodeItem(0)->pos(), QPointF(0, 0));
    }

    void dropAddsGroup()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        QMimeData mime;
        mime.setData(QLatin1String(kGpuMimeType), "gaudi3");
        const int index = canvas.dropGpu(&mime, QPointF(505, 303));
        QCOMPARE(index, 3);
        QCOMPARE(canvas.nodeItemCount(), 4);
        const memx::NodeGroup &g = doc.cluster().groups[3];
        QCOMPARE(g.gpu, std::string("gaudi3"));
        QCOMPARE(g.gpusPerNode, 8);
        // Centred on the drop point, snapped to the 10-unit grid: 505 - 105 = 400, 303 - 43 = 260.
        QCOMPARE(g.x, 400.0);
        QCOMPARE(g.y, 260.0);
        QCOMPARE(canvas.selectedGroups(), QVector<int> {3});
        doc.undoStack()->undo();
        QCOMPARE(canvas.nodeItemCount(), 3);

        QMimeData bad;
        bad.setData(QLatin1String(kGpuMimeType), "no-such-gpu");
        QSignalSpy msg(&canvas, &ClusterCanvas::message);
        QCOMPARE(canvas.dropGpu(&bad, QPointF()), -1);
        QCOMPARE(msg.count(), 1);
        QMimeData text;
        text.setText(QStringLiteral("h100-sxm"));
        QCOMPARE(canvas.dropGpu(&text, QPointF()), -1); // only the palette's MIME type is accepted
    }

    /// A box dropped onto another lands on the nearest free spot: overlapping no box (stacks
    /// included, 20-unit gap), close to the drop point. Brute force over every pair of boxes.
    void dropOntoABoxDoesNotOverlap()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        QMimeData mime;
        mime.setData(QLatin1String(kGpuMimeType), "gaudi3");
        for (int k = 0; k < 6; ++k) { // always onto group 0's centre
            const memx::NodeGroup target = doc.cluster().groups[0];
            const QPointF centre(target.x + NodeGroupItem::kWidth / 2, target.y + NodeGroupItem::kHeight / 2);
            QVERIFY(canvas.dropGpu(&mime, centre) >= 0);
        }
        const auto &groups = doc.cluster().groups;
        auto box = [](const memx::NodeGroup &g) {
            const qreal stack = NodeGroupItem::kStackOffset * std::min(g.count - 1, NodeGroupItem::kMaxShadows);
            return QRectF(g.x, g.y, NodeGroupItem::kWidth + stack, NodeGroupItem::kHeight + stack);
        };
        for (size_t a = 0; a < groups.size(); ++a)
            for (size_t b = a + 1; b < groups.size(); ++b)
                QVERIFY2(!box(groups[a]).intersects(box(groups[b])),
                         qPrintable(QStringLiteral("boxes %1 and %2 overlap").arg(a).arg(b)));
        // Nearby: within a few box sizes of the drop point.
        const QRectF first = box(groups[0]);
        for (size_t i = groups.size() - 6; i < groups.size(); ++i)
            QVERIFY(QLineF(first.topLeft(), QPointF(groups[i].x, groups[i].y)).length() < 4 * NodeGroupItem::kWidth);
        // A drop onto empty space is unchanged (the snapped centre).
        QCOMPARE(canvas.freeSpotNear(QPointF(5000, 5000)), QPointF(5000, 5000));
    }

    void mouseDragIsOneUndoStep()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        canvas.resize(900, 600);
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        canvas.resetZoom();
        canvas.centerOn(QPointF(400, 100));
        const QPoint start = viewPoint(canvas, canvas.nodeItem(2)->centre()); // h100 at (520, 0)
        QTest::mousePress(canvas.viewport(), Qt::LeftButton, {}, start);
        for (int step = 1; step <= 4; ++step) {
            QMouseEvent move(QEvent::MouseMove, QPointF(start + QPoint(0, 20 * step)),
                             canvas.viewport()->mapToGlobal(QPointF(start + QPoint(0, 20 * step))), Qt::NoButton,
                             Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(canvas.viewport(), &move);
        }
        QTest::mouseRelease(canvas.viewport(), Qt::LeftButton, {}, start + QPoint(0, 80));
        QCOMPARE(doc.cluster().groups[2].x, 520.0);
        QCOMPARE(doc.cluster().groups[2].y, 80.0);
        QCOMPARE(doc.undoStack()->count(), 1);
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster().groups[2].y, 0.0);
        QCOMPARE(canvas.nodeItem(2)->pos(), QPointF(520, 0));
    }

    void shiftDragConnects()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        canvas.resize(1000, 600);
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        canvas.resetZoom();
        canvas.centerOn(QPointF(400, 60));
        const QPoint a = viewPoint(canvas, canvas.nodeItem(0)->centre());
        const QPoint b = viewPoint(canvas, canvas.nodeItem(2)->centre());
        QTest::mousePress(canvas.viewport(), Qt::LeftButton, Qt::ShiftModifier, a);
        QMouseEvent move(QEvent::MouseMove, QPointF(b), canvas.viewport()->mapToGlobal(QPointF(b)), Qt::NoButton,
                         Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(canvas.viewport(), &move);
        QTest::mouseRelease(canvas.viewport(), Qt::LeftButton, Qt::ShiftModifier, b);
        QCOMPARE(doc.cluster().network.overrides.size(), size_t(1));
        const memx::LinkOverride &o = doc.cluster().network.overrides[0];
        QCOMPARE(o.a, std::string("a100"));
        QCOMPARE(o.b, std::string("h100"));
        QCOMPARE(o.link, doc.cluster().network.interNode); // starts at the default, edited later
        QCOMPARE(canvas.linkItemCount(), 1);
        QCOMPARE(canvas.selectedLinks(), QVector<int> {0});
        QVERIFY(doc.cluster().groups[0].x == 0 && doc.cluster().groups[0].y == 0); // nothing moved
    }

    void deleteKeyRemovesSelection()
    {
        ClusterDocument doc;
        open(doc, "paper-20gpu-mixed-consumer.json");
        const memx::Cluster before = doc.cluster();
        ClusterCanvas canvas(&doc);
        canvas.selectGroup(0);
        canvas.selectGroup(2, false);
        QCOMPARE(canvas.selectedGroups(), (QVector<int> {0, 2}));
        QTest::keyClick(&canvas, Qt::Key_Delete);
        QCOMPARE(doc.cluster().groups.size(), before.groups.size() - 2);
        QCOMPARE(canvas.nodeItemCount(), int(before.groups.size()) - 2);
        QCOMPARE(doc.undoStack()->count(), 1); // macro: one step
        doc.undoStack()->undo();
        QCOMPARE(doc.cluster(), before);
        QCOMPARE(canvas.nodeItemCount(), int(before.groups.size()));
    }

    void fitSettlesOnAWideShortCanvas()
    {
        // The 512-GPU sample in a wide, short canvas (the window's default split): fitting on
        // resize used to show/hide a scroll bar, which resized the viewport, which fitted again -
        // forever (the workbench's UI thread at 100 %, the results never shown).
        struct ResizeCounter : QObject {
            int resizes = 0;
            bool eventFilter(QObject *, QEvent *e) override
            {
                resizes += e->type() == QEvent::Resize;
                return false;
            }
        } counter;
        ClusterDocument doc;
        ClusterCanvas canvas(&doc);
        canvas.viewport()->installEventFilter(&counter);
        open(doc, "cross-vendor-512gpu.json");
        canvas.resize(1100, 240);
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        QTest::qWait(200);
        const int settled = counter.resizes;
        QTest::qWait(300);
        QCOMPARE(counter.resizes, settled); // no resize after the first 200 ms
        QVERIFY2(settled < 10, qPrintable(QString::number(settled)));
        // Fitted: every group is inside the viewport, with no scroll bar.
        QVERIFY(!canvas.horizontalScrollBar()->isVisible());
        QVERIFY(!canvas.verticalScrollBar()->isVisible());
        const QRect items = canvas.mapFromScene(canvas.scene()->itemsBoundingRect()).boundingRect();
        QVERIFY2(
            canvas.viewport()->rect().adjusted(-1, -1, 1, 1).contains(items),
            qPrintable(
                QStringLiteral("%1,%2 %3x%4").arg(items.x()).arg(items.y()).arg(items.width()).arg(items.height())));
        // Zooming in turns the scroll bars back on.
        canvas.zoomIn();
        canvas.zoomIn();
        QTest::qWait(50);
        QVERIFY(canvas.horizontalScrollBar()->isVisible() || canvas.verticalScrollBar()->isVisible());
    }

    void zoomClamps()
    {
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        canvas.resetZoom();
        canvas.zoomIn();
        QVERIFY(qFuzzyCompare(canvas.zoom(), 1.2));
        for (int i = 0; i < 50; ++i)
            canvas.zoomIn();
        QVERIFY(qFuzzyCompare(canvas.zoom(), 4.0));
        for (int i = 0; i < 100; ++i)
            canvas.zoomOut();
        QVERIFY(qFuzzyCompare(canvas.zoom(), 0.1));
    }

    void catalogueModel()
    {
        const memx::Catalogue &cat = memx::builtinCatalogue();
        GpuCatalogueModel model(cat);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        int devices = 0;
        for (int v = 0; v < model.rowCount(); ++v)
            devices += model.rowCount(model.index(v, 0));
        QCOMPARE(devices, int(cat.devices().size()));
        const QModelIndex h100 = model.indexOfDevice("h100-sxm");
        QVERIFY(h100.isValid());
        QVERIFY(model.parent(h100).data().toString().startsWith(QLatin1String("NVIDIA")));
        QCOMPARE(model.index(h100.row(), GpuCatalogueModel::MemoryColumn, h100.parent()).data().toString(),
                 QStringLiteral("79"));
        QVERIFY(model.data(h100, Qt::ToolTipRole).toString().contains(QLatin1String("989.4 TFLOP/s")));
        QVERIFY(model.flags(h100) & Qt::ItemIsDragEnabled);
        QVERIFY(!(model.flags(model.parent(h100)) & Qt::ItemIsDragEnabled));
        std::unique_ptr<QMimeData> mime(model.mimeData({h100}));
        QVERIFY(mime);
        QCOMPARE(mime->data(QLatin1String(kGpuMimeType)), QByteArray("h100-sxm"));
        // Dropping what the palette drags adds that GPU.
        ClusterDocument doc;
        open(doc);
        ClusterCanvas canvas(&doc);
        QCOMPARE(canvas.dropGpu(mime.get(), QPointF(0, 400)), 3);
        QCOMPARE(doc.cluster().groups[3].name, std::string("h100_2")); // "h100" is taken
    }

    void paletteFilter()
    {
        GpuPalette palette;
        QAbstractItemModelTester tester(palette.view()->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto *filter = palette.findChild<QLineEdit *>();
        QVERIFY(filter);
        filter->setText(QStringLiteral("gaudi"));
        QAbstractItemModel *m = palette.view()->model();
        QCOMPARE(m->rowCount(), 1); // only Intel remains
        QCOMPARE(m->rowCount(m->index(0, 0)), 2);
    }

    void vendorColours()
    {
        QCOMPARE(vendorColor("NVIDIA"), QColor(0x76, 0xb9, 0x00));
        QVERIFY(vendorColor("AMD") != vendorColor("Intel"));
        QCOMPARE(vendorColor("Biren"), vendorColor("Cambricon")); // others share grey
        QCOMPARE(vendorTextColor("NVIDIA"), QColor(Qt::black));
        QCOMPARE(vendorTextColor("Huawei"), QColor(Qt::white));
    }
};

QTEST_MAIN(TestClusterCanvas)
#include "tst_clustercanvas.moc"
