// model_chat.mjs — placeholder protocol module for fake_model.mjs; the real one replaces it.
export const NAME = 'chat';
export const matches = () => false;
export const read = () => ({ model: null, userTexts: [], lastUser: null, toolResults: [], tools: [] });
export const answer = (req, res) => res.writeHead(404).end();
