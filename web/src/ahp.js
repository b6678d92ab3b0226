// A small client of the Agent Host Protocol over one WebSocket: JSON-RPC 2.0
// requests and notifications, one message per text frame (PROTOCOL.md 1).
//
// The token never goes into a URL: a browser cannot set Authorization on a
// WebSocket, so it is offered as the subprotocol termhost.bearer.TOKEN beside plain
// termhost, which the host echoes (see server.go, signInToken).

export const ROOT = 'ahp-root://';

// A token must be an HTTP token to be offered as a subprotocol (RFC 6455 4.1).
const TOKEN_CHARS = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

export function isSendableToken(token) {
  return typeof token === 'string' && TOKEN_CHARS.test(token);
}

// RpcError is a JSON-RPC error answer; its message is written for people.
export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export class HostConnection {
  // onMessage gets every notification; onClose({code, reason, opened}) once.
  constructor({ url, token, onMessage, onClose }) {
    this.url = url;
    this.token = token;
    this.onMessage = onMessage;
    this.onClose = onClose;
    this.nextId = 1;
    this.clientSeq = 0;
    this.pending = new Map();
    this.ws = null;
    this.opened = false;
    this.closed = false;
  }

  // open resolves once the socket is open, and rejects if it closes first: the
  // host refused the sign-in, or cannot be reached (a page cannot tell which).
  open() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, ['termhost', 'termhost.bearer.' + this.token]);
      this.ws = ws;
      ws.addEventListener('open', () => {
        this.opened = true;
        resolve();
      });
      ws.addEventListener('message', (ev) => this.receive(ev.data));
      ws.addEventListener('close', (ev) => {
        this.closed = true;
        const err = new Error(ev.reason || 'the connection closed');
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
        if (!this.opened) {
          reject(err);
          return;
        }
        this.onClose({ code: ev.code, reason: ev.reason });
      });
    });
  }

  receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (msg.id !== undefined && msg.method === undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
      else p.resolve(msg.result);
      return;
    }
    if (msg.method) this.onMessage(msg);
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new Error('not connected');
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', ...msg }));
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ id, method, params });
      } catch (err) {
        this.pending.delete(id);
        reject(err);
      }
    });
  }

  notify(method, params) {
    this.send({ method, params });
  }

  // dispatch sends an action; the host echoes it, with a rejectionReason if it
  // refused it. It returns the action's clientSeq.
  dispatch(channel, action) {
    const clientSeq = ++this.clientSeq;
    this.notify('dispatchAction', { channel, clientSeq, action });
    return clientSeq;
  }

  // close ends the connection without calling onClose.
  close() {
    this.onClose = () => {};
    if (this.ws && !this.closed) this.ws.close(1000, 'the page closed it');
  }
}
