import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#else
import Security
#endif

// The session delegate's challenges: the proxy's credentials and the server's trust, which are
// Callsign's to answer, then the app's hook (``URLSessionHooks``), then Callsign's answer.
extension SessionDelegate {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Answered off this thread: on Linux this runs on FoundationNetworking's work queue
        // (`InlineOperationQueue`), and what an answer does next — `cancel()`, or `suspend()` and
        // `resume()` to retry with a credential — waits for that queue.
        let completionHandler: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = { disposition, credential in
            DispatchQueue.global().async { completionHandler(disposition, credential) }
        }
        // What Callsign owns is answered by Callsign: the configured proxy's credentials (they
        // go to the proxy only), and the server's trust when configuration.tls sets roots or pins.
        let space = challenge.protectionSpace
        let ownsChallenge = space.isProxy()
            ? proxyCredentials != nil
            : Self.isServerTrust(space) && !tls.isDefault
        guard !ownsChallenge, let ask = hooks.challenge else {
            answerAsCallsign(challenge, task: task, completionHandler: completionHandler)
            return
        }
        // Every other challenge goes to the app's hook first; `nil` leaves it to Callsign.
        let asked = ChallengeAsked(challenge: challenge, task: task)
        Task {
            if let answer = await ask(asked.challenge, asked.task) {
                completionHandler(answer.disposition, answer.credential)
            } else {
                self.answerAsCallsign(asked.challenge, task: asked.task, completionHandler: completionHandler)
            }
        }
    }

    /// Callsign's own answer: the proxy gets its configured credentials once; any other
    /// challenge is the platform's business below (a 401 reaches the caller as a response).
    private func answerAsCallsign(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.protectionSpace.isProxy() {
            if let credentials = proxyCredentials, challenge.previousFailureCount == 0 {
                completionHandler(
                    .useCredential, URLCredential(user: credentials.username, password: credentials.password, persistence: .forSession))
            } else {
                completionHandler(.cancelAuthenticationChallenge, nil)
            }
            return
        }
        // Authentication is Callsign's job; a 401 must reach the caller as a response.
        answerServerChallenge(challenge, task: task, completionHandler: completionHandler)
    }

    /// A challenge and its task, handed to the app's hook from another task. Safety: Foundation
    /// makes both before the delegate is called and documents them as safe to use from any
    /// thread; neither is changed here.
    private struct ChallengeAsked: @unchecked Sendable {
        let challenge: URLAuthenticationChallenge
        let task: URLSessionTask
    }

    // The one place where this file differs by platform: which challenges each one raises and
    // how they are answered.
    #if canImport(FoundationNetworking)
    /// Whether a challenge is about the server's trust: FoundationNetworking raises none.
    private static func isServerTrust(_ space: URLProtectionSpace) -> Bool { false }

    /// Answers a challenge that is not the proxy's. FoundationNetworking raises one only after a
    /// whole 401 response has been delivered to this delegate (on its serial queue), and offers
    /// no way to just complete the task: so the call is finished here with what arrived, then the
    /// task is cancelled.
    private func answerServerChallenge(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) {
            switch entry {
            case .streaming(let head, let body):
                if let head, let failure = challenge.failureResponse as? HTTPURLResponse {
                    head.resume(returning: failure)
                }
                body.finish()
            case .collecting(let collecting):
                if let failure = challenge.failureResponse as? HTTPURLResponse {
                    collecting.whole.resume(returning: collecting.collected(failure, .success(collecting.body)))
                } else {
                    collecting.whole.resume(throwing: Self.noResponse)
                }
            }
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
    #else
    /// Whether a challenge is about the server's trust.
    private static func isServerTrust(_ space: URLProtectionSpace) -> Bool {
        space.authenticationMethod == NSURLAuthenticationMethodServerTrust
    }

    /// Answers a challenge that is not the proxy's: a server-trust challenge is evaluated against
    /// the configured trust roots and pins (the system decides when none are set); any other is
    /// rejected, so that a 401 reaches the caller as a response.
    private func answerServerChallenge(
        _ challenge: URLAuthenticationChallenge, task: URLSessionTask,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust {
            guard !tls.isDefault, let trust = challenge.protectionSpace.serverTrust else {
                completionHandler(.performDefaultHandling, nil)  // the system's decision, as configured
                return
            }
            if let refusal = Self.evaluate(trust, host: challenge.protectionSpace.host, settings: tls) {
                refusals.withLock { $0[task.taskIdentifier] = refusal }
                completionHandler(.cancelAuthenticationChallenge, nil)
            } else {
                completionHandler(.useCredential, URLCredential(trust: trust))
            }
        } else {
            completionHandler(.rejectProtectionSpace, nil)
        }
    }

    /// Checks a server's trust against ``TLSSettings/trustRoots``, then its chain against the
    /// host's pins; returns why it is refused, or `nil` to accept it.
    private static func evaluate(_ trust: SecTrust, host: String, settings: TLSSettings) -> APIError? {
        let anchors: [TLSCertificate]?
        switch settings.trustRoots {
        case .system: anchors = nil
        case .adding(let roots), .only(let roots): anchors = roots
        }
        if let anchors {
            let certificates = anchors.compactMap { SecCertificateCreateWithData(nil, $0.der as CFData) }
            SecTrustSetAnchorCertificates(trust, certificates as CFArray)
            if case .only = settings.trustRoots {
                SecTrustSetAnchorCertificatesOnly(trust, true)
            } else {
                SecTrustSetAnchorCertificatesOnly(trust, false)
            }
        }
        var failure: CFError?
        guard SecTrustEvaluateWithError(trust, &failure) else {
            let code = failure.map { CFErrorGetCode($0) } ?? 0
            // errSecCertificateExpired (-67818), errSecHostNameMismatch (-67602); else untrusted.
            switch code {
            case -67818, -67819:
                return .notSent(.certificateExpired, "the certificate of \(host) has expired or is not valid yet")
            case -67602:
                return .notSent(.certificateHostMismatch, "the certificate of \(host) is valid, but for another host name")
            default:
                return .notSent(
                    .certificateUntrusted, "the certificate of \(host) does not lead to a trusted root (configuration.tls.trustRoots)")
            }
        }
        guard let digests = settings.pins?.activeDigests(for: host) else { return nil }
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        let pinned = chain.contains { certificate in
            CertificateDER.subjectPublicKeyInfo(of: SecCertificateCopyData(certificate) as Data)
                .map { digests.contains(CertificatePins.digest(ofSubjectPublicKeyInfo: $0)) } ?? false
        }
        return pinned
            ? nil
            : .notSent(.certificatePinMismatch, "the certificate of \(host) has none of the public keys pinned for it (configuration.tls.pins)")
    }
    #endif
}
