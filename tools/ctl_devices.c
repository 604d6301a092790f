/* ctl_devices.c — `scilan_ctl devices`: finds the PCI functions scilan can use
 * (NTB bridges of Intel, AMD, IDT, Switchtec and PLX, and QEMU ivshmem) with
 * libpci, and shows their ids, names, BARs and NUMA node.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pci/pci.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_devices.h"

#define ANY_DEVICE 0x10000u /* wildcard in match[].device */
#define ANY_CLASS 0x10000u  /* wildcard in match[].class_id */

/* First match wins: the PLX ids before the PLX "any NT function" row. */
static const struct {
	unsigned vendor, device, class_id;
	const char *kind;
} match[] = {
	{ 0x8086, 0x0e0d, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x0e0e, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x0e08, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x2f0d, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x2f0e, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x2f08, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x6f0d, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x6f0e, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x6f08, ANY_CLASS, "intel-ntb" },
	{ 0x8086, 0x201c, ANY_CLASS, "intel-ntb" },
	{ 0x1022, 0x145b, ANY_CLASS, "amd-ntb" },
	{ 0x1022, 0x148b, ANY_CLASS, "amd-ntb" },
	{ 0x1022, 0x14c0, ANY_CLASS, "amd-ntb" },
	{ 0x1022, 0x14c3, ANY_CLASS, "amd-ntb" },
	{ 0x111d, ANY_DEVICE, PCI_CLASS_BRIDGE_OTHER, "idt" },
	{ 0x11f8, ANY_DEVICE, PCI_CLASS_BRIDGE_OTHER, "switchtec" },
	{ 0x10b5, 0x87b0, ANY_CLASS, "plx" },
	{ 0x10b5, 0x87b1, ANY_CLASS, "plx" },
	{ 0x10b5, ANY_DEVICE, PCI_CLASS_BRIDGE_OTHER, "plx" },
	{ 0x1af4, 0x1110, ANY_CLASS, "ivshmem" },
};

static const char *device_kind(unsigned vendor, unsigned device, unsigned class_id)
{
	for (size_t i = 0; i < sizeof(match) / sizeof(match[0]); i++)
		if (match[i].vendor == vendor && (match[i].device == ANY_DEVICE || match[i].device == device) &&
		    (match[i].class_id == ANY_CLASS || match[i].class_id == class_id))
			return match[i].kind;
	return NULL;
}

/* libpci's fatal errors call a->error, which must not return: jump back to
 * ctl_scan_devices with the message instead of letting libpci exit(1). */
static sigjmp_buf pci_fail_jmp;
static char pci_fail_msg[256];

static void pci_fail(char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void pci_fail(char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vsnprintf(pci_fail_msg, sizeof(pci_fail_msg), msg, ap);
	va_end(ap);
	siglongjmp(pci_fail_jmp, 1);
}

static void pci_quiet(char *msg, ...) __attribute__((format(printf, 1, 2)));
static void pci_quiet(char *msg, ...)
{
	(void)msg;
}

static const char *sysfs_pci_dir(void)
{
	const char *dir = getenv("SCILAN_SYSFS_PCI");

	return dir && *dir ? dir : "/sys/bus/pci";
}

/* <sysfs>/devices/<slot>/numa_node, or -1. */
static int sysfs_numa_node(const char *slot)
{
	char path[4200];
	FILE *f;
	int node = -1;

	snprintf(path, sizeof(path), "%s/devices/%s/numa_node", sysfs_pci_dir(), slot);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &node) != 1)
		node = -1;
	fclose(f);
	return node < 0 ? -1 : node;
}

static void fill_device(struct pci_access *pacc, struct pci_dev *p, int filled, const char *kind, struct ctl_device *d)
{
	memset(d, 0, sizeof(*d));
	d->domain = (unsigned)p->domain;
	d->bus = p->bus;
	d->dev = p->dev;
	d->func = p->func;
	snprintf(d->slot, sizeof(d->slot), "%04x:%02x:%02x.%x", d->domain, d->bus, d->dev, d->func);
	d->vendor = p->vendor_id;
	d->device = p->device_id;
	d->class_id = p->device_class;
	d->kind = kind;
	/* NO_NUMBERS: NULL when pci.ids does not know the id; the name stays "". */
	if (!pci_lookup_name(pacc, d->vendor_name, sizeof(d->vendor_name), PCI_LOOKUP_VENDOR | PCI_LOOKUP_NO_NUMBERS,
			     p->vendor_id))
		d->vendor_name[0] = '\0';
	if (!pci_lookup_name(pacc, d->device_name, sizeof(d->device_name), PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_NUMBERS,
			     p->vendor_id, p->device_id))
		d->device_name[0] = '\0';
	for (int i = 0; i < 6; i++) {
		pciaddr_t raw = p->base_addr[i];
		pciaddr_t size = (filled & PCI_FILL_SIZES) ? p->size[i] : 0;

		if (!raw && !size)
			continue; /* unused, or the upper half of a 64-bit BAR */
		d->bars[d->nbars].index = i;
		d->bars[d->nbars].base = (uint64_t)(raw & ((raw & PCI_BASE_ADDRESS_SPACE_IO) ? PCI_ADDR_IO_MASK
											: PCI_ADDR_MEM_MASK));
		d->bars[d->nbars].size = (uint64_t)size;
		d->nbars++;
	}
	d->numa_node = -1;
#ifdef PCI_FILL_NUMA_NODE
	if ((filled & PCI_FILL_NUMA_NODE) && p->numa_node >= 0)
		d->numa_node = p->numa_node;
#endif
	if (d->numa_node < 0)
		d->numa_node = sysfs_numa_node(d->slot);
}

int ctl_scan_devices(struct ctl_scan *scan, char *err, size_t err_size)
{
	struct pci_access *volatile pacc = NULL;
	struct ctl_device *volatile devs = NULL;
	volatile size_t count = 0;
	volatile unsigned scanned = 0;
	int want = PCI_FILL_IDENT | PCI_FILL_CLASS | PCI_FILL_BASES | PCI_FILL_SIZES;

#ifdef PCI_FILL_NUMA_NODE
	want |= PCI_FILL_NUMA_NODE;
#endif
	memset(scan, 0, sizeof(*scan));
	if (sigsetjmp(pci_fail_jmp, 0)) {
		/* libpci errors leave the access object consistent (a device being
		 * built is not linked in yet): clean it up as on success. */
		snprintf(err, err_size, "cannot access PCI devices: %s", pci_fail_msg);
		free(devs);
		if (pacc)
			pci_cleanup(pacc);
		return -1;
	}
	pacc = pci_alloc();
	pacc->error = pci_fail;
	pacc->warning = pci_quiet;
	/* sysfs only: never fall back to raw config-space port I/O as root. */
	pacc->method = PCI_ACCESS_SYS_BUS_PCI;
	pci_set_param(pacc, "sysfs.path", (char *)sysfs_pci_dir());
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (struct pci_dev *p = pacc->devices; p; p = p->next) {
		int filled = pci_fill_info(p, want);
		const char *kind;
		struct ctl_device *grown;

		scanned++;
		kind = device_kind(p->vendor_id, p->device_id, p->device_class);
		if (!kind)
			continue;
		grown = realloc(devs, (count + 1) * sizeof(*grown));
		if (!grown) {
			snprintf(err, err_size, "out of memory");
			free(devs);
			pci_cleanup(pacc);
			return -1;
		}
		devs = grown;
		fill_device(pacc, p, filled, kind, &devs[count]);
		count++;
	}
	pci_cleanup(pacc);
	scan->devs = devs;
	scan->count = count;
	scan->scanned = scanned;
	return 0;
}

void ctl_scan_free(struct ctl_scan *scan)
{
	free(scan->devs);
	memset(scan, 0, sizeof(*scan));
}

void ctl_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

void ctl_json_str_or_null(FILE *out, const char *s)
{
	if (*s)
		ctl_json_str(out, s);
	else
		fputs("null", out);
}

/* 65536 -> "64 KiB"; exact multiples only, else bytes. */
static void human_size(uint64_t n, char *buf, size_t size)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && n >= 1024 && n % 1024 == 0) {
		n /= 1024;
		u++;
	}
	snprintf(buf, size, "%" PRIu64 " %s", n, unit[u]);
}

static void print_text(const struct ctl_scan *scan)
{
	printf("%-13s %-10s %-10s %-5s %s\n", "SLOT", "KIND", "ID", "NUMA", "NAME");
	for (size_t i = 0; i < scan->count; i++) {
		const struct ctl_device *d = &scan->devs[i];
		char id[16], numa[16];

		snprintf(id, sizeof(id), "%04x:%04x", d->vendor, d->device);
		snprintf(numa, sizeof(numa), "%d", d->numa_node);
		printf("%-13s %-10s %-10s %-5s %s %s\n", d->slot, d->kind, id, d->numa_node < 0 ? "?" : numa,
		       *d->vendor_name ? d->vendor_name : "(unknown vendor)",
		       *d->device_name ? d->device_name : "(unknown device)");
		for (int b = 0; b < d->nbars; b++) {
			char sz[32];

			human_size(d->bars[b].size, sz, sizeof(sz));
			printf("%-13s BAR%d 0x%016" PRIx64 " %s\n", "", d->bars[b].index, d->bars[b].base,
			       d->bars[b].size ? sz : "size unknown");
		}
	}
	printf("%zu device%s (scanned %u PCI functions)\n", scan->count, scan->count == 1 ? "" : "s", scan->scanned);
}

static void print_json(const struct ctl_scan *scan)
{
	printf("{\"devices\":[");
	for (size_t i = 0; i < scan->count; i++) {
		const struct ctl_device *d = &scan->devs[i];

		printf("%s{\"slot\":\"%s\",\"kind\":\"%s\",\"vendor_id\":\"0x%04x\",\"device_id\":\"0x%04x\","
		       "\"class\":\"0x%04x\",\"vendor\":",
		       i ? "," : "", d->slot, d->kind, d->vendor, d->device, d->class_id);
		ctl_json_str(stdout, d->vendor_name);
		printf(",\"device\":");
		ctl_json_str(stdout, d->device_name);
		printf(",\"numa_node\":%d,\"bars\":[", d->numa_node);
		for (int b = 0; b < d->nbars; b++)
			printf("%s{\"index\":%d,\"base\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 "}", b ? "," : "",
			       d->bars[b].index, d->bars[b].base, d->bars[b].size);
		printf("]}");
	}
	printf("],\"scanned\":%u}\n", scan->scanned);
}

int cmd_devices(int argc, char **argv, bool json)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
	struct ctl_scan scan;
	char err[512];
	int c;

	optind = 0; /* 0: glibc re-initializes its scanner for this new argument list */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return 2;
		printf("usage: scilan_ctl [--json] devices\n"
		       "Lists the NTB and ivshmem PCI functions with their BARs and NUMA node.\n");
		return 0;
	}
	if (optind != argc) {
		fprintf(stderr, "scilan_ctl: devices takes no arguments\n");
		return 2;
	}
	if (ctl_scan_devices(&scan, err, sizeof(err)) < 0) {
		fprintf(stderr, "scilan_ctl: %s\n", err);
		return 1;
	}
	if (json)
		print_json(&scan);
	else if (scan.count == 0)
		printf("scilan_ctl: no NTB or ivshmem device found (scanned %u PCI functions)\n", scan.scanned);
	else
		print_text(&scan);
	ctl_scan_free(&scan);
	return 0;
}
