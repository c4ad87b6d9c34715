#!/usr/bin/env python3
# A second implementation of Spec/SEALING.md's cryptography, written from the spec alone with
# Python's `cryptography` package (Debian: python3-cryptography). It derives the text keys, builds
# the bindings and padded plaintexts, seals with the vectors' fixed nonces, rebuilds a whole
# sealed-add entry and makes the back link of Spec/vectors/sealing.txt; then it verifies the key record of Spec/vectors/sealing-keys.txt
# (Ed25519) and opens each of its wraps (RFC 9180 base mode, written out below), and makes the fixed ids
# of Spec/vectors/sealing-ids.txt (SipHash-2-4, written out below), and the fingerprints and safety
# number of Spec/vectors/sealing-safety.txt with bob's vouch for his next keys (§4.7), a device
# link's offer and id of Spec/vectors/sealing-link.txt (§4.6; the sealed keys themselves are
# HPKE's PSK mode, checked by the Swift tests), and a link invitation's id, sealing key, link key
# and proof of Spec/vectors/sealing-invite.txt (§4.8). Every value must equal the vectors'. One line per check; exits 1 on any difference.
#   python3 scripts/sealing-vectors.py
import base64
import hashlib
import hmac
import os
import sys
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
failed = False


def check(what, ok):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed |= not ok


def fields(name):
    out = {}
    for line in open(os.path.join(root, "Spec/vectors", name), encoding="utf-8"):
        if line.startswith("#") or ": " not in line:
            continue
        key, _, value = line.rstrip("\n").partition(": ")
        out[key] = value
    return out


def varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def zigzag(n):
    return varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def string(b):
    return varint(len(b)) + b


def uuid_id(text):
    return b"\x01" + uuid.UUID(text).bytes


def text_key(key, zone):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=zone, info=b"jlog-seal v1 text").derive(key)


def padded_size(n):
    for bucket in (16, 32, 64, 128, 256):
        if n <= bucket:
            return bucket
    e = n.bit_length() - 1
    mask = (1 << (e - e.bit_length())) - 1
    return (n + mask) & ~mask


def pad(text):
    body = varint(len(text)) + text
    return body + bytes(padded_size(len(body)) - len(body))


# 1. Sealed values and the back link (SEALING.md §2, §3).
v = fields("sealing.txt")
zone = v["zone"].encode()
key1 = bytes.fromhex(v["key1"])
check("text key (HKDF-SHA256)", text_key(key1, zone).hex() == v["textKey1"])
hlc = (1764000000000 << 16) | 3
aad = (b"JLS1" + string(zone) + uuid_id("00000000-0000-4000-8000-000000000001") + bytes([0x41, 1])
       + uuid_id("00000000-0000-4000-8000-0000000000aa") + string(b"alice:phone") + varint(hlc)
       + zigzag(1764000000123 - 1764000000000) + varint(1))
nonce = bytes([0x24]) * 12
for i in range(3):
    text = v.get("text%d" % i, "").encode()
    check("binding %d" % i, aad.hex() == v["aad%d" % i])
    check("padded plaintext %d" % i, pad(text).hex() == v["plaintext%d" % i])
    sealed = bytes([1]) + varint(1) + nonce + AESGCM(text_key(key1, zone)).encrypt(nonce, pad(text), aad)
    check("sealed value %d (AES-256-GCM)" % i, sealed.hex() == v["sealed%d" % i])
# The whole sealed-add entry (FORMAT.md §6 with SEALING.md §5's body): version, id, zone, author,
# hlc, wall delta, kind 0x41, item, no anchor, then the sealed value with its length.
sealed0 = bytes.fromhex(v["sealed0"])
entry = (bytes([1]) + uuid_id("00000000-0000-4000-8000-000000000001") + string(zone) + string(b"alice:phone")
         + varint(hlc) + zigzag(1764000000123 - 1764000000000) + bytes([0x41])
         + uuid_id("00000000-0000-4000-8000-0000000000aa") + bytes([0]) + string(sealed0))
check("sealed-add entry", entry.hex() == v["sealedAddEntry0"])
key2 = bytes.fromhex(v["key2"])
link = nonce + AESGCM(text_key(key2, zone)).encrypt(nonce, key1, b"JLS1-back" + string(zone) + varint(2))
check("back link of epoch 2", link.hex() == v["backLink2"])
check("PADME sizes", [padded_size(n) for n in (257, 300, 1000, 4098)] == [272, 304, 1024, 4352])

# 2. A key record (SEALING.md §4): its signature, and every wrap opened (RFC 9180 base mode).
k = fields("sealing-keys.txt")


def raw(public):
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


secrets = {b"alice": bytes.fromhex(k["aliceSecret"]), b"bob": bytes.fromhex(k["bobSecret"])}
identity = Ed25519PrivateKey.from_private_bytes(secrets[b"alice"][:32]).public_key()
check("alice's identity key", raw(identity).hex() == k["aliceIdentity"])
check("alice's wrap key", raw(X25519PrivateKey.from_private_bytes(secrets[b"alice"][32:]).public_key()).hex() == k["aliceWrap"])
for who in (b"alice", b"bob"):
    wrap = raw(X25519PrivateKey.from_private_bytes(secrets[who][32:]).public_key())
    check(who.decode() + "'s key id", hashlib.sha256(wrap).digest()[:16].hex() == k[who.decode() + "KeyID"])

record = bytes.fromhex(k["record1"])


def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return n, i


def read_string(b, i):
    n, i = read_varint(b, i)
    return b[i:i + n], i + n


i = 1
epoch, i = read_varint(record, i)
i += 1  # reason
creator, i = read_string(record, i)
i += 16  # creator key id
count, i = read_varint(record, i)
wraps = []
for _ in range(count):
    account, i = read_string(record, i)
    wraps.append((account, record[i:i + 16], record[i + 16:i + 48], record[i + 48:i + 96]))
    i += 96
i += 1 + (60 if record[i] else 0)
try:
    identity.verify(record[i:i + 64], b"JLS1-epoch" + string(zone) + record[:i])
    check("record signature (Ed25519, creator %s)" % creator.decode(), len(record) == i + 64)
except Exception as e:  # noqa: BLE001
    check("record signature: %s" % e, False)


def labeled_extract(suite, salt, label, ikm):
    return hmac.new(salt or bytes(32), b"HPKE-v1" + suite + label + ikm, hashlib.sha256).digest()


def labeled_expand(suite, prk, label, info, length):
    info = length.to_bytes(2, "big") + b"HPKE-v1" + suite + label + info
    out, block, n = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([n]), hashlib.sha256).digest()
        out, n = out + block, n + 1
    return out[:length]


kem = b"KEM" + (0x0020).to_bytes(2, "big")
suite = b"HPKE" + (0x0020).to_bytes(2, "big") + (0x0001).to_bytes(2, "big") + (0x0003).to_bytes(2, "big")
for account, key_id, enc, wrapped in wraps:
    secret_key = X25519PrivateKey.from_private_bytes(secrets[account][32:])
    dh = secret_key.exchange(X25519PublicKey.from_public_bytes(enc))
    shared = labeled_expand(kem, labeled_extract(kem, b"", b"eae_prk", dh), b"shared_secret", enc + raw(secret_key.public_key()), 32)
    info = b"jlog-seal v1 wrap" + string(zone) + varint(epoch) + string(account) + key_id
    context = b"\x00" + labeled_extract(suite, b"", b"psk_id_hash", b"") + labeled_extract(suite, b"", b"info_hash", info)
    secret = labeled_extract(suite, shared, b"secret", b"")
    aead_key = labeled_expand(suite, secret, b"key", context, 32)
    base_nonce = labeled_expand(suite, secret, b"base_nonce", context, 12)
    opened = ChaCha20Poly1305(aead_key).decrypt(base_nonce, wrapped, b"")
    check("%s's wrap opens to key1 (HPKE)" % account.decode(), opened.hex() == k["key1"])



# SEALING.md §5.1: a sealed zone's fixed ids (SipHash-2-4, as FORMAT.md §7.5 derives an id).
def siphash(k0, k1, message):
    mask = 0xFFFFFFFFFFFFFFFF
    rotl = lambda x, b: ((x << b) | (x >> (64 - b))) & mask
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & mask; v[1] = rotl(v[1], 13) ^ v[0]; v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & mask; v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & mask; v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & mask; v[1] = rotl(v[1], 17) ^ v[2]; v[2] = rotl(v[2], 32)

    tail = len(message) % 8
    words = [int.from_bytes(message[i:i + 8], "little") for i in range(0, len(message) - tail, 8)]
    words.append(int.from_bytes(message[len(message) - tail:], "little") | ((len(message) & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def fixed_id(kind, zone, epoch):
    message = b"JLS1-id" + bytes([kind]) + string(zone) + varint(epoch)
    h1 = siphash(0x4A4C533100000001, 0x6669786564696431, message)
    h2 = siphash(0x4A4C533100000002, 0x6669786564696432, message)
    high, low = (h1 & ~0xF000) | 0x8000, (h2 & ~(3 << 62)) | (2 << 62)
    return str(uuid.UUID(bytes=high.to_bytes(8, "big") + low.to_bytes(8, "big")))


ids = fields("sealing-ids.txt")
id_zone = b"alice/~000102030405060708090a0b0c0d0e0f"
check("the key record ids of epochs 1 and 2", [fixed_id(0x87, id_zone, e) for e in (1, 2)] == [ids["keyRecord1"], ids["keyRecord2"]])
check("the rotation-due ids of epochs 1 and 300", [fixed_id(0x88, id_zone, e) for e in (1, 300)] == [ids["rotationDue1"], ids["rotationDue300"]])
check("a rotation-due body", (b"\x01" + varint(300)).hex() == ids["rotationDueBody300"])


# SEALING.md §4.4: key fingerprints and the safety number of alice's and bob's keys.
safety = fields("sealing-safety.txt")


def fingerprint(who):
    ident = raw(Ed25519PrivateKey.from_private_bytes(secrets[who][:32]).public_key())
    wrap = raw(X25519PrivateKey.from_private_bytes(secrets[who][32:]).public_key())
    return hashlib.sha256(b"jlog-keys v1" + string(who) + ident + wrap).digest()


def half(fp):
    return "".join("%05d" % (int.from_bytes(fp[i * 5:i * 5 + 5], "big") % 100000) for i in range(6))


check("the key fingerprints", [fingerprint(w).hex() for w in (b"alice", b"bob")] == [safety["aliceFingerprint"], safety["bobFingerprint"]])
check("the safety number", half(fingerprint(b"alice")) + half(fingerprint(b"bob")) == safety["safetyNumber"])


# SEALING.md §4.7: bob's vouch for his next keys verifies under his identity key.
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
next_secret = bytes(range(0xC0, 0x100))
next_ident = raw(Ed25519PrivateKey.from_private_bytes(next_secret[:32]).public_key())
next_wrap = raw(X25519PrivateKey.from_private_bytes(next_secret[32:]).public_key())
vouched = b"jlog-keys-next v1" + string(b"bob") + next_ident + next_wrap
check("bob's next keys and what his vouch signs", [next_ident.hex(), next_wrap.hex(), vouched.hex()]
      == [safety["bobNextIdentity"], safety["bobNextWrap"], safety["vouchedBytes"]])
try:
    Ed25519PrivateKey.from_private_bytes(secrets[b"bob"][:32]).public_key().verify(bytes.fromhex(safety["vouch"]), vouched)
    check("bob's vouch verifies", True)
except Exception:
    check("bob's vouch verifies", False)


# SEALING.md §4.6: a device link's offer and link id.
link = fields("sealing-link.txt")
device_public = raw(X25519PrivateKey.from_private_bytes(bytes.fromhex(link["newDevicePrivateKey"])).public_key())
offer = "jdl1." + base64.urlsafe_b64encode(device_public + bytes.fromhex(link["secret"])).decode().rstrip("=")
check("a device link's offer", offer == link["offer"])
check("a device link's id", hashlib.sha256(b"jlog-link v1" + device_public).digest()[:16].hex() == link["linkID"])


# SEALING.md §4.8: a link invitation's id, sealing key, link key and proof.
invite = fields("sealing-invite.txt")
link_secret = bytes.fromhex(invite["secret"])
invite_zone = b"alice/~00112233445566778899aabbccddeeff"
link_id = hashlib.sha256(b"jlog-link-id v1" + link_secret).digest()[:16]
k_s = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"jlog-link-secret v1", info=string(invite_zone)).derive(link_secret)
check("a link's id and sealing key", [link_id.hex(), k_s.hex()] == [invite["linkID"], invite["sealingKey"]])
nonce = bytes([0x0C]) * 12
sealed = AESGCM(k_s).encrypt(nonce, bytes([7]) * 32, b"JLS1-link" + string(invite_zone) + varint(3) + link_id)
check("a link key", (b"\x01" + varint(3) + link_id + nonce + sealed).hex() == invite["linkKeyBody"])
bob_ident = raw(Ed25519PrivateKey.from_private_bytes(secrets[b"bob"][:32]).public_key())
bob_wrap = raw(X25519PrivateKey.from_private_bytes(secrets[b"bob"][32:]).public_key())
mac = hmac.new(link_secret, b"jlog-link-proof v1" + string(invite_zone) + string(b"bob") + bob_ident + bob_wrap, hashlib.sha256).digest()
check("a link proof", (b"\x01" + link_id + string(b"bob") + bob_ident + bob_wrap + mac).hex() == invite["proofBody"])

sys.exit(1 if failed else 0)
