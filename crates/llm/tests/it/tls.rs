//! A TLS front for tests: a real TLS server with a fresh self-signed certificate for `localhost`
//! that forwards every connection, decrypted, to a plain TCP address (the test's HTTP server, or
//! RabbitMQ), so that clients are tested against real handshakes and real certificate checks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpStream;

/// A running TLS front; it stops with the test process.
pub struct TlsFront {
    /// Its port on 127.0.0.1 (connect to `localhost:PORT`, the name its certificate holds).
    pub port: u16,
    /// The certificate it presents, PEM: a client trusts it as an extra root.
    pub certificate_pem: String,
    handshakes: Arc<AtomicUsize>,
}

impl TlsFront {
    /// Starts a front for `upstream` on a free port, in its own thread and runtime.
    pub fn start(upstream: SocketAddr) -> TlsFront {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .expect("self-signed certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(signing_key.serialize_der().into()),
            )
            .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        let addr = super::server::listen(move |socket| {
            let (acceptor, counted) = (acceptor.clone(), counted.clone());
            async move {
                // A client that refuses the certificate ends the handshake: nothing to
                // forward then.
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let Ok(mut plain) = TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            }
        });
        TlsFront {
            port: addr.port(),
            certificate_pem: cert.pem(),
            handshakes,
        }
    }

    /// TLS handshakes that succeeded so far.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }
}
