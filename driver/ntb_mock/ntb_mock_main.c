// SPDX-License-Identifier: GPL-2.0
/* ntb_mock_main.c — TEST ONLY: the mock NTB module: its parameters, the PCI
 * driver that turns each QEMU "pci-testdev" function into one NTB port (an
 * ntb_dev needs a PCI parent), and the debugfs directory.  The models: a
 * back-to-back pair (ports=2, the default; ntb_mock_pair.c) or an IDT-like
 * switch of 3..8 ports (ntb_mock_idt.c).
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "ntb_mock.h"

unsigned long mock_mw_max = 8UL << 20;
module_param_named(mw_max, mock_mw_max, ulong, 0444);
MODULE_PARM_DESC(mw_max, "Largest memory window each port offers (bytes)");

int mock_nports = 2;
module_param_named(ports, mock_nports, int, 0444);
MODULE_PARM_DESC(ports, "2: two NTB ports back to back (default); 3..8: ports of one IDT-like switch");

struct dentry *mock_dbg;

static int mock_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	if (device_iommu_mapped(&pdev->dev)) {
		dev_err(&pdev->dev, "ntb_mock: needs DMA address == physical address (no IOMMU)\n");
		return -ENODEV;
	}
	return mock_nports == 2 ? mock_pair_probe(pdev) : mock_idt_probe(pdev);
}

static void mock_remove(struct pci_dev *pdev)
{
	if (mock_nports == 2)
		mock_pair_remove(pdev);
	else
		mock_idt_remove(pdev);
}

static const struct pci_device_id mock_ids[] = {
	{ PCI_DEVICE(0x1b36, 0x0005) }, /* QEMU pci-testdev */
	{ }
};
MODULE_DEVICE_TABLE(pci, mock_ids);

static struct pci_driver mock_driver = {
	.name = "ntb_mock",
	.id_table = mock_ids,
	.probe = mock_probe,
	.remove = mock_remove,
};

static int __init mock_init(void)
{
	int rc;

	if (mock_nports < 2 || mock_nports > MOCK_IDT_MAX_PORTS) {
		pr_err("ntb_mock: ports=%d: 2 (a pair) or 3..%d (a switch)\n", mock_nports,
		       MOCK_IDT_MAX_PORTS);
		return -EINVAL;
	}
	mock_dbg = debugfs_create_dir("ntb_mock", NULL);
	if (mock_nports == 2)
		mock_pair_debugfs();
	else
		mock_idt_debugfs();
	rc = pci_register_driver(&mock_driver);
	if (rc)
		debugfs_remove_recursive(mock_dbg);
	return rc;
}

static void __exit mock_exit(void)
{
	pci_unregister_driver(&mock_driver);
	debugfs_remove_recursive(mock_dbg);
}

module_init(mock_init);
module_exit(mock_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("TEST ONLY: NTB ports in one machine, back to back or behind an IDT-like switch");
