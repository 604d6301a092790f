/* SPDX-License-Identifier: GPL-2.0 */
/* ntb_mock.h — TEST ONLY: what the mock NTB's files share: its module
 * parameters, its debugfs directory, and the two models a PCI function
 * (QEMU pci-testdev) becomes: a port of the back-to-back pair
 * (ntb_mock_pair.c) or of the IDT-like switch (ntb_mock_idt.c).
 */
#ifndef NTB_MOCK_H
#define NTB_MOCK_H

#include <linux/types.h>

struct dentry;
struct pci_dev;

extern unsigned long mock_mw_max;   /* largest memory window (bytes) */
extern int mock_nports;             /* 2: the pair; 3..8: the switch */
extern struct dentry *mock_dbg;     /* /sys/kernel/debug/ntb_mock */

int mock_pair_probe(struct pci_dev *pdev);
void mock_pair_remove(struct pci_dev *pdev);
void mock_pair_debugfs(void);

#define MOCK_IDT_MAX_PORTS 8
int mock_idt_probe(struct pci_dev *pdev);
void mock_idt_remove(struct pci_dev *pdev);
void mock_idt_debugfs(void);

#endif
