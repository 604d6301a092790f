/* ctl_devices.h — the PCI scan shared by `scilan_ctl devices` and `scilan_ctl
 * topo`: which PCI functions are NTB or ivshmem devices, with their BARs and
 * NUMA node (ctl_devices.c), plus the JSON string writer both commands use.
 */
#ifndef SCILAN_CTL_DEVICES_H
#define SCILAN_CTL_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctl_bar {
	int index;      /* BAR number, 0..5 */
	uint64_t base;  /* bus address, flag bits cleared */
	uint64_t size;  /* bytes; 0 if the OS did not say */
};

struct ctl_device {
	unsigned domain, bus, dev, func;
	char slot[32];                  /* "dddd:bb:dd.f" */
	unsigned vendor, device, class_id;
	char vendor_name[128], device_name[256];
	const char *kind;               /* intel-ntb|amd-ntb|idt|switchtec|plx|ivshmem */
	struct ctl_bar bars[6];
	int nbars;
	int numa_node;                  /* -1: unknown */
};

struct ctl_scan {
	struct ctl_device *devs;
	size_t count;
	unsigned scanned;               /* PCI functions looked at */
};

/* Scan the PCI bus (sysfs; $SCILAN_PCI_SYSFS overrides /sys/bus/pci/devices).
 * 0, or -1 with a one-line reason in err. */
int ctl_scan_devices(struct ctl_scan *scan, char *err, size_t err_size);
void ctl_scan_free(struct ctl_scan *scan);

/* Write s as a JSON string literal, quotes included. */
void ctl_json_str(FILE *out, const char *s);
/* The same, or null for an empty (unknown) string. */
void ctl_json_str_or_null(FILE *out, const char *s);

/* `scilan_ctl [--json] devices`: 0, 1 (PCI access failed) or 2 (usage). */
int cmd_devices(int argc, char **argv, bool json);

#endif
