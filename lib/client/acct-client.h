/* acct-client.h - the client side of acctd's varlink API (io.acctd.Accounting),
 * shared by acctctl and any C program that asks acctd for values.
 *
 * One connection is one Unix stream socket carrying varlink messages: a JSON
 * object followed by a NUL byte. A call is {"method", "parameters", "more",
 * "oneway"}; its replies are {"parameters", "continues", "error"}, in call
 * order; a call with "more" gets replies until one without "continues" (or an
 * error, which is always final).
 *
 * Usage, one call:
 *
 *     _cleanup_(acct_client_freep) struct acct_client *c = NULL;
 *     _cleanup_(acct_reply_clear) struct acct_reply reply = {};
 *     r = acct_client_connect("unix:/run/acctd/io.acctd", &c);
 *     r = acct_client_call(c, "Get", params, &reply);   // "Get" = io.acctd.Accounting.Get
 *     if (r < 0 && reply.error)   // acctd answered with an error: r is its errno
 *             acct_error_describe(reply.error, reply.parameters, &text);
 *
 * and a stream: acct_client_send(c, "Watch", params, ACCT_CALL_MORE), then
 * acct_client_receive() until reply.continues is false.
 *
 * Errors map to negative errnos (acct_error_to_errno()); the error's name and
 * parameters stay in the reply, and acct_error_describe() puts them in plain
 * words ("No such cgroup: /foo"). Transport failures: -ECONNRESET when acctd
 * closed the connection, -EBADMSG for a reply that is not a varlink message,
 * -EMSGSIZE for one over the size limit, -ETIMEDOUT, -EINTR when a signal
 * interrupted the wait (so that a program can stop on SIGINT).
 *
 * A connection is used by one thread at a time, except for the charging calls
 * at the end (acct_client_charge() and the others of that section), which
 * any threads may make on one connection at once. Nothing here logs. The
 * header needs only json-c, so that it can be installed for programs outside
 * acctd. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCT_CLIENT_INTERFACE "io.acctd.Accounting"
#define ACCT_CLIENT_SYSTEM_SOCKET "/run/acctd/io.acctd"
/* The largest reply accepted by default, as systemd's varlink limit. */
#define ACCT_CLIENT_MAX_MESSAGE_DEFAULT (16u << 20)

/* The errors of io.acctd.Accounting and the standard ones of org.varlink.service. */
#define ACCT_ERROR_NO_SUCH_CGROUP ACCT_CLIENT_INTERFACE ".NoSuchCgroup"
#define ACCT_ERROR_INVALID_CGROUP_PATH ACCT_CLIENT_INTERFACE ".InvalidCgroupPath"
#define ACCT_ERROR_NO_SUCH_QUANTITY ACCT_CLIENT_INTERFACE ".NoSuchQuantity"
#define ACCT_ERROR_RELOAD_FAILED ACCT_CLIENT_INTERFACE ".ReloadFailed"
#define ACCT_ERROR_RESOURCE_LIMIT_EXCEEDED ACCT_CLIENT_INTERFACE ".ResourceLimitExceeded"
#define ACCT_ERROR_NO_SUCH_RESOURCE ACCT_CLIENT_INTERFACE ".NoSuchResource"
#define ACCT_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define ACCT_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define ACCT_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define ACCT_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define ACCT_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define ACCT_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"

/* Flags of a call. */
enum {
	ACCT_CALL_MORE = 1u << 0,   /* ask for a stream of replies ("more": true) */
	ACCT_CALL_ONEWAY = 1u << 1, /* no reply at all ("oneway": true) */
};

struct acct_client;

/* One reply. After acct_client_receive() succeeded, parameters is an object
 * (an empty one when the message had none or null), error is NULL or the
 * error's name. Owned by the reply; acct_reply_clear() frees them. */
struct acct_reply {
	struct json_object *parameters;
	char *error;
	bool continues;
};

/* Free what a reply holds and zero it; safe on a zeroed reply, and usable as a
 * cleanup function: _cleanup_(acct_reply_clear) struct acct_reply r = {}. */
void acct_reply_clear(struct acct_reply *reply);

/* The address acctd listens on when none is given: ACCTD_ADDRESS if set and
 * not empty; else, as root, unix:/run/acctd/io.acctd; else the per-user
 * daemon's unix:$XDG_RUNTIME_DIR/acctd/io.acctd (/run/user/UID when
 * XDG_RUNTIME_DIR is unset or relative) when that socket exists, and the
 * system one otherwise (its socket is open to every local user for reading).
 * Returns 0 and a new string in *ret, or -ENOMEM. */
int acct_client_default_address(char **ret);

/* The socket path of a varlink address: "unix:PATH" (varlink's ";mode=..."
 * suffix ignored), "unix:@NAME" for an abstract socket, or an absolute PATH.
 * Returns 0 and a new string in *ret_path, -EINVAL for a malformed address,
 * -EPROTONOSUPPORT for another transport (tcp:, exec:), -ENOMEM. */
int acct_client_address_path(const char *address, char **ret_path);

/* Connect to `address` (see acct_client_address_path()). Returns 0 and a new
 * client, or the negative errno of socket()/connect() (-ENOENT or
 * -ECONNREFUSED when nothing listens: acctd is not running; -EACCES when the
 * socket may not be opened), or an error of acct_client_address_path(). */
int acct_client_connect(const char *address, struct acct_client **ret);

/* A client on a connected stream socket `fd`, which it owns from then on
 * (even on failure: fd is closed). Returns 0, -EBADF or -ENOMEM. */
int acct_client_new_from_fd(int fd, struct acct_client **ret);

/* Close the connection and free the client. Accepts NULL; returns NULL. */
struct acct_client *acct_client_free(struct acct_client *c);
/* For __attribute__((cleanup(acct_client_freep))). */
static inline void acct_client_freep(struct acct_client **c)
{
	if (*c)
		*c = acct_client_free(*c);
}

/* The socket, for poll() beside other descriptors. Readable does not mean a
 * whole reply is there (acct_client_receive() may still wait), and a reply
 * may already be buffered while it is not readable: after a reply, call
 * acct_client_receive() with timeout 0 before polling again. */
int acct_client_fd(const struct acct_client *c);

/* Change the largest reply accepted (default ACCT_CLIENT_MAX_MESSAGE_DEFAULT;
 * at least 64 KiB). Returns 0, -EBUSY while part of a reply is buffered, or
 * -ENOMEM. */
int acct_client_set_max_message(struct acct_client *c, size_t max);

/* Send a call. `method` is a full name ("org.varlink.service.GetInfo") or one
 * of io.acctd.Accounting ("List"); `parameters` NULL means {} and is not
 * consumed. flags: ACCT_CALL_MORE, ACCT_CALL_ONEWAY. Returns 0, -EINVAL for
 * a NULL/empty method or both flags, -ENOMEM, or the send's error (-EPIPE
 * or -ECONNRESET when acctd went away). */
int acct_client_send(struct acct_client *c, const char *method, struct json_object *parameters, unsigned flags);

/* Wait up to timeout_ms (-1: forever) for the next reply and store it in *ret
 * (cleared first). A reply with an error still returns 0: see ret->error.
 * Returns 0, -ETIMEDOUT, -EINTR (a signal came; nothing was lost, call again),
 * -ECONNRESET (connection closed), -EBADMSG (not a varlink reply), -EMSGSIZE
 * (over the limit; the connection is then unusable), -ENOMEM. */
int acct_client_receive(struct acct_client *c, int timeout_ms, struct acct_reply *ret);

/* Wait for the next reply as acct_client_receive() does, but hand out its
 * text unparsed: 0 and *ret_size bytes in *ret (a JSON object as acctd sent
 * it, terminated by the message's NUL), valid until the next call on c. The
 * text is not checked: for callers that read large replies (List of 10,000
 * cgroups) with their own strict reader instead of building json-c objects.
 * Errors as acct_client_receive(), but never -EBADMSG. */
int acct_client_receive_text(struct acct_client *c, int timeout_ms, const char **ret, size_t *ret_size);

/* The reply in a message's text (as from acct_client_receive_text()), as
 * acct_client_receive() would have returned it: 0, -EBADMSG (not a varlink
 * reply), -ENOMEM. For the rare reply that a caller's own reader does not
 * handle, such as an error. */
int acct_reply_parse(const char *text, size_t size, struct acct_reply *ret);

/* Send a call without flags and wait for its reply. Returns 0 with the reply
 * in *ret; when acctd answered with an error, the reply is in *ret too
 * (ret->error set) and the return value is acct_error_to_errno(ret->error);
 * other failures as acct_client_send()/acct_client_receive(), with *ret
 * cleared (ret->error NULL). */
int acct_client_call(struct acct_client *c, const char *method, struct json_object *parameters, int timeout_ms,
		     struct acct_reply *ret);

/* Collect the whole answer of a streaming call: send with ACCT_CALL_MORE and
 * append the array `key` of every reply to one array. A daemon that answers
 * in one reply without "continues" works too. Returns 0 and the array in
 * *ret_array; a varlink error as acct_client_call() does (its reply in
 * *ret_error_reply, when given); -EBADMSG when a reply lacks the array. */
int acct_client_call_collect(struct acct_client *c, const char *method, struct json_object *parameters,
			     const char *key, int timeout_ms, struct json_object **ret_array,
			     struct acct_reply *ret_error_reply);

/* The negative errno for a varlink error name, as systemd maps the standard
 * ones: InvalidParameter -EINVAL, PermissionDenied -EACCES, MethodNotFound
 * -ENXIO, InterfaceNotFound -EADDRNOTAVAIL, MethodNotImplemented -ENOTTY,
 * ExpectedMore -EBADE; NoSuchCgroup -ENOENT, InvalidCgroupPath -EINVAL,
 * NoSuchQuantity -ENODATA, ReloadFailed -EIO, NoSuchResource -ENOKEY; any
 * other -EBADR. */
int acct_error_to_errno(const char *name);

/* The error in plain words, for people: "No such cgroup: /foo", "Invalid
 * cgroup path '/../x': it leaves the cgroup root", "Permission denied", ...;
 * an unknown error is "NAME" followed by its parameters as JSON. parameters
 * may be NULL. Returns 0 and a new string, or -ENOMEM. */
int acct_error_describe(const char *name, struct json_object *parameters, char **ret);

/* ---- charges (issue 32; acct_charge(3)) -------------------------------------------
 *
 * Programs charge what they use of a resource declared in acctd.conf
 * ([resource.NAME]) to a cgroup: their own by default (acctd finds it from the
 * connection's peer credentials), or one they name (their own or a
 * descendant; root and acctd's admin group may name any). Three paths, from
 * the simplest to the cheapest per charge:
 *
 *   acct_client_charge()        one varlink call per charge (Charge)
 *   acct_client_charge_batch()  many charges per call (ChargeBatch)
 *   acct_client_open_slot()     a shared-memory slot (OpenChargeSlot); then
 *                               acct_charge_slot_add() with no system call
 *
 * Thread safety: the three calls serialise on the connection's lock, so any
 * threads may use one connection for them at once (not while another thread
 * runs a stream with acct_client_send()/acct_client_receive() on it). A slot
 * is charged from any threads at once.
 *
 * Errors of the calls: acctd's, as acct_client_call() returns them (see
 * acct_error_to_errno(): NoSuchResource -ENOKEY, PermissionDenied -EACCES,
 * NoSuchCgroup -ENOENT, InvalidCgroupPath and InvalidParameter -EINVAL,
 * MethodNotFound -ENXIO from an acctd without charges, any other -EBADR),
 * or the transport's (-ECONNRESET, -EPIPE, -ETIMEDOUT after
 * ACCT_CLIENT_CHARGE_TIMEOUT_MS, -EBADMSG for a reply that does not have the
 * promised shape, -ENOMEM). The calls keep no reply for the caller: the
 * error acctd answered with (its name, parameters and plain words) is the
 * calling thread's acct_client_last_error() until its next charging call. */

/* How long a charging call waits for acctd's reply (systemd's varlink default). */
#define ACCT_CLIENT_CHARGE_TIMEOUT_MS 45000
/* The largest ChargeBatch message acct_client_charge_batch() sends, and the
 * most charges in one: below the smallest max_message_size acctd accepts
 * (64 KiB) and the array length of its default configuration. */
#define ACCT_CLIENT_CHARGE_BATCH_BYTES (60u << 10)
#define ACCT_CLIENT_CHARGE_BATCH_ITEMS 1024u

/* Flags of acct_client_charge(). */
enum {
	ACCT_CHARGE_SYNC = 1u << 0, /* return only once the charge is durable ("sync": true) */
};

/* One charge of a batch. The strings are the caller's. */
struct acct_charge {
	const char *resource; /* a [resource.NAME] of acctd.conf */
	int64_t delta;        /* signed: a release is negative */
	const char *cgroup;   /* NULL: the caller's own cgroup */
};

/* Charge `delta` of `resource` to `cgroup` (NULL: the caller's own) with one
 * Charge call; flags: ACCT_CHARGE_SYNC. Returns 0 once acctd applied it (and,
 * with ACCT_CHARGE_SYNC, made it durable), -EINVAL for a NULL or empty
 * resource or an unknown flag (nothing sent), or an error as above. */
int acct_client_charge(struct acct_client *c, const char *resource, int64_t delta, const char *cgroup,
		       unsigned flags);

/* Charge the `n` charges in order with ChargeBatch calls, as many per message
 * as ACCT_CLIENT_CHARGE_BATCH_BYTES and _ITEMS allow (each charge is sized
 * with its strings escaped at worst, so no message passes acctd's limit); a
 * message that acctd refuses as too long (ResourceLimitExceeded) is sent again
 * in halves, which is safe because acctd refuses such a message before it
 * applies any of it. Stops at the first error. *ret_applied (may be NULL) is
 * written on success and on failure alike: the sum of the `applied` of every
 * message acctd confirmed, so that on failure charges[*ret_applied ...] can be
 * retried when acctd applies a batch whole or not at all. Returns 0 (also for
 * n = 0, without a call), -EINVAL for a NULL array with n > 0 or a charge
 * without a resource (nothing sent), or an error as above. */
int acct_client_charge_batch(struct acct_client *c, const struct acct_charge *charges, size_t n,
			     size_t *ret_applied);

/* The error acctd answered the calling thread's last charging call with
 * (acct_client_charge(), acct_client_charge_batch(),
 * acct_client_open_slot()), for what its errno does not say: which error
 * -EBADR stands for, which resource or cgroup acctd named, words for people.
 *
 *     r = acct_client_charge(c, "gpu_memory", 4096, NULL, 0);
 *     if (r < 0 && acct_client_last_error(NULL, NULL, &text) > 0)
 *             fprintf(stderr, "%s\n", text);  // "No such resource: gpu_memory (...)"
 *
 * Every charging call replaces it as it returns: with acctd's error, or with
 * none when the call succeeded or failed without one (refused before
 * sending, -ETIMEDOUT, -ECONNRESET, -EBADMSG...: the errno is all there is;
 * a ChargeBatch message acctd refused as too long and that was then sent in
 * halves is not an error of the call). Thread safety: kept per thread, as
 * errno is, whatever the connection: threads that charge on one connection
 * at once each read their own call's error, and no other thread's call
 * changes it. Other calls (acct_client_call() and the rest, whose replies
 * hold their errors) leave it alone. Freed when the thread exits.
 *
 * Returns 1 and, for each pointer that is not NULL, the error's name
 * ("io.acctd.Accounting.NoSuchResource") in *ret_name, its parameters (an
 * object, empty when acctd sent none) in *ret_parameters, and its words as
 * acct_error_describe() writes them in *ret_text: new strings for free(), a
 * new reference for json_object_put(). Returns 0 and NULL in each when the
 * thread's last charging call did not end with an error of acctd (or it
 * made none); -ENOMEM, with nothing written. The record stays: calling
 * again returns the same. */
int acct_client_last_error(char **ret_name, struct json_object **ret_parameters, char **ret_text);

/* A shared-memory charge slot for one (resource, cgroup). */
struct acct_charge_slot;

/* Open a slot for `resource` and `cgroup` (NULL: the caller's own): calls
 * OpenChargeSlot and receives the slot's memfd with the reply (SCM_RIGHTS),
 * maps it and checks its header. The slot is independent of the connection
 * from then on (close the connection whenever you like). Returns 0 and a new
 * slot in *ret (free it with acct_charge_slot_close()); -EINVAL for a NULL or
 * empty resource; -EBADMSG when the reply carries no descriptor, or its
 * `slot` is not 0 (the index of the one descriptor), or the memory's header
 * is malformed; -EPROTO for a slot layout of another version; -EPERM when the
 * memfd is not sealed; or an error as above. Descriptors that come with any
 * other reply are closed. */
int acct_client_open_slot(struct acct_client *c, const char *resource, const char *cgroup,
			  struct acct_charge_slot **ret);

/* Charge `delta` through the slot: no system call, no lock, never fails.
 * Cost: a function call around the counter engine's inline per-CPU update,
 * a few nanoseconds (docs/performance.md, "Charges"); a fold to the node sum
 * every ~batch/|delta| charges. acctd's reads of the slot are off by at most
 * the resource's error budget. The slot's total must stay within +/- 2^62 or
 * acctd treats the slot as corrupt. */
void acct_charge_slot_add(struct acct_charge_slot *slot, int64_t delta);

/* Unmap and free the slot; accepts NULL; returns NULL. What was charged stays
 * charged (the resource's configuration says whether acctd releases a
 * client's charges when it exits). No thread may use the slot afterwards. */
struct acct_charge_slot *acct_charge_slot_close(struct acct_charge_slot *slot);
/* For __attribute__((cleanup(acct_charge_slot_closep))). */
static inline void acct_charge_slot_closep(struct acct_charge_slot **slot)
{
	if (*slot)
		*slot = acct_charge_slot_close(*slot);
}
